/**
 * A small, strict checker for XML property lists, written for the tests. It parses the XML subset a
 * plist uses — declaration, DOCTYPE, comments, elements, attributes, text with the five predefined
 * entities and character references — and then checks the structure of Apple's
 * PropertyList-1.0.dtd:
 *
 *   plistObject = array | data | date | dict | real | integer | string | true | false
 *   plist  (plistObject)          version="1.0"
 *   array  (plistObject)*
 *   dict   (key, plistObject)*
 *   key, string, data, date, real, integer  (#PCDATA)
 *   true, false  EMPTY
 *
 * plus the value syntax plutil enforces (integers, reals, ISO dates, base64 data) and unique
 * dict keys. It returns the errors found and the value as plain JS.
 */

interface Element {
  name: string;
  attrs: Record<string, string>;
  children: (Element | string)[];
}

export type PlistValue = string | number | boolean | Date | Buffer | PlistValue[] | { [key: string]: PlistValue };

const OBJECTS = new Set(['array', 'data', 'date', 'dict', 'real', 'integer', 'string', 'true', 'false']);
const NAME = /^[A-Za-z_][\w.-]*/;

function decodeText(raw: string, errors: string[]): string {
  if (raw.includes('<')) errors.push(`a bare "<" in text: ${JSON.stringify(raw.slice(0, 40))}`);
  return raw.replace(/&([^;\s]*);?/g, (m, ent: string) => {
    const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
    if (!m.endsWith(';')) return (errors.push(`a bare "&" in text: ${JSON.stringify(raw.slice(0, 40))}`), m);
    if (ent in named) return named[ent]!;
    const num = /^#(x[0-9a-fA-F]+|\d+)$/.exec(ent);
    if (num) return String.fromCodePoint(num[1]!.startsWith('x') ? parseInt(num[1]!.slice(1), 16) : Number(num[1]));
    errors.push(`an unknown entity &${ent};`);
    return m;
  });
}

/** Parses the document; well-formedness errors go to `errors`. */
function parseXml(xml: string, errors: string[]): { doctype: string | null; root: Element | null } {
  let i = 0;
  let doctype: string | null = null;
  const stack: Element[] = [{ name: '#document', attrs: {}, children: [] }];
  if (!xml.startsWith('<?xml ')) errors.push('no XML declaration at the very start');
  while (i < xml.length) {
    const top = stack[stack.length - 1]!;
    if (xml.startsWith('<?', i)) {
      const end = xml.indexOf('?>', i);
      if (end < 0) return (errors.push('an unterminated <?…?>'), { doctype, root: null });
      if (i !== 0) errors.push('a processing instruction after the start');
      i = end + 2;
    } else if (xml.startsWith('<!--', i)) {
      const end = xml.indexOf('-->', i + 4);
      if (end < 0) return (errors.push('an unterminated comment'), { doctype, root: null });
      if (xml.slice(i + 4, end).includes('--')) errors.push('"--" inside a comment');
      i = end + 3;
    } else if (xml.startsWith('<!DOCTYPE', i)) {
      const end = xml.indexOf('>', i);
      if (end < 0 || stack.length > 1) errors.push('a misplaced DOCTYPE');
      doctype = xml.slice(i, end + 1);
      i = end + 1;
    } else if (xml.startsWith('</', i)) {
      const end = xml.indexOf('>', i);
      const name = xml.slice(i + 2, end).trim();
      const open = stack.pop();
      if (!open || open.name !== name) errors.push(`</${name}> closes <${open?.name ?? 'nothing'}>`);
      i = end + 1;
    } else if (xml[i] === '<') {
      const end = xml.indexOf('>', i);
      if (end < 0) return (errors.push('an unterminated tag'), { doctype, root: null });
      let inner = xml.slice(i + 1, end);
      const selfClosing = inner.endsWith('/');
      if (selfClosing) inner = inner.slice(0, -1);
      const name = NAME.exec(inner)?.[0];
      if (!name) errors.push(`a bad tag <${inner}>`);
      const el: Element = { name: name ?? '?', attrs: {}, children: [] };
      let rest = inner.slice(el.name.length).trim();
      while (rest) {
        const a = /^([A-Za-z_][\w.-]*)\s*=\s*("([^"<]*)"|'([^'<]*)')\s*/.exec(rest);
        if (!a) {
          errors.push(`bad attributes in <${el.name}>: ${rest}`);
          break;
        }
        if (a[1]! in el.attrs) errors.push(`a repeated attribute ${a[1]}`);
        el.attrs[a[1]!] = decodeText(a[3] ?? a[4] ?? '', errors);
        rest = rest.slice(a[0].length);
      }
      if (stack.length === 1 && top.children.some((c) => typeof c !== 'string')) errors.push('more than one root element');
      top.children.push(el);
      if (!selfClosing) stack.push(el);
      i = end + 1;
    } else {
      const next = xml.indexOf('<', i);
      const raw = xml.slice(i, next < 0 ? xml.length : next);
      if (stack.length === 1 && raw.trim()) errors.push(`text outside the root: ${JSON.stringify(raw.trim().slice(0, 40))}`);
      top.children.push(decodeText(raw, errors));
      i = next < 0 ? xml.length : next;
    }
  }
  if (stack.length !== 1) errors.push(`<${stack[stack.length - 1]!.name}> is never closed`);
  const root = stack[0]!.children.find((c): c is Element => typeof c !== 'string') ?? null;
  return { doctype, root };
}

function elementsOf(el: Element, errors: string[]): Element[] {
  for (const c of el.children) if (typeof c === 'string' && c.trim()) errors.push(`text ${JSON.stringify(c.trim().slice(0, 40))} inside <${el.name}>`);
  return el.children.filter((c): c is Element => typeof c !== 'string');
}

function textOf(el: Element, errors: string[]): string {
  if (el.children.some((c) => typeof c !== 'string')) errors.push(`<${el.name}> holds elements; it takes text only`);
  return el.children.filter((c): c is string => typeof c === 'string').join('');
}

function objectValue(el: Element, errors: string[], path: string): PlistValue {
  if (!OBJECTS.has(el.name)) {
    errors.push(`<${el.name}> at ${path} is not a plist object`);
    return '';
  }
  if (Object.keys(el.attrs).length) errors.push(`<${el.name}> at ${path} takes no attributes`);
  switch (el.name) {
    case 'true':
    case 'false':
      if (el.children.length) errors.push(`<${el.name}> at ${path} must be empty`);
      return el.name === 'true';
    case 'string':
      return textOf(el, errors);
    case 'integer': {
      const t = textOf(el, errors).trim();
      if (!/^[+-]?(\d+|0x[0-9a-fA-F]+)$/.test(t)) errors.push(`<integer> at ${path} is not an integer: ${JSON.stringify(t)}`);
      return Number(t);
    }
    case 'real': {
      const t = textOf(el, errors).trim();
      if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|infinity|nan)$/i.test(t)) errors.push(`<real> at ${path} is not a number: ${JSON.stringify(t)}`);
      return Number(t);
    }
    case 'date': {
      const t = textOf(el, errors).trim();
      if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(t)) errors.push(`<date> at ${path} is not YYYY-MM-DDTHH:MM:SSZ: ${JSON.stringify(t)}`);
      return new Date(t);
    }
    case 'data': {
      const t = textOf(el, errors).replace(/\s+/g, '');
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(t)) errors.push(`<data> at ${path} is not base64`);
      return Buffer.from(t, 'base64');
    }
    case 'array':
      return elementsOf(el, errors).map((c, i) => objectValue(c, errors, `${path}[${i}]`));
    default: {
      const out: { [key: string]: PlistValue } = {};
      const kids = elementsOf(el, errors);
      for (let i = 0; i < kids.length; i += 2) {
        const k = kids[i]!;
        const v = kids[i + 1];
        if (k.name !== 'key') {
          errors.push(`<dict> at ${path}: expected <key>, got <${k.name}>`);
          continue;
        }
        const key = textOf(k, errors);
        if (key in out) errors.push(`<dict> at ${path}: key ${JSON.stringify(key)} appears twice`);
        if (!v || v.name === 'key') {
          errors.push(`<dict> at ${path}: key ${JSON.stringify(key)} has no value`);
          if (v) i -= 1;
          continue;
        }
        out[key] = objectValue(v, errors, `${path}.${key}`);
      }
      return out;
    }
  }
}

/** Checks an XML plist; `errors` is empty when the document is well-formed and follows the DTD. */
export function checkPlist(xml: string): { errors: string[]; value: PlistValue | null } {
  const errors: string[] = [];
  const { doctype, root } = parseXml(xml, errors);
  if (!doctype || !/^<!DOCTYPE\s+plist\s+PUBLIC\s+"-\/\/Apple\/\/DTD PLIST 1\.0\/\/EN"\s+"http:\/\/www\.apple\.com\/DTDs\/PropertyList-1\.0\.dtd"\s*>$/.test(doctype)) {
    errors.push(`missing or unexpected DOCTYPE: ${doctype}`);
  }
  if (!root || root.name !== 'plist') return { errors: [...errors, `the root is <${root?.name ?? 'nothing'}>, not <plist>`], value: null };
  for (const [k, v] of Object.entries(root.attrs)) if (k !== 'version' || v !== '1.0') errors.push(`<plist ${k}="${v}">: only version="1.0" is allowed`);
  const kids = elementsOf(root, errors);
  if (kids.length !== 1) return { errors: [...errors, `<plist> must hold exactly one object, holds ${kids.length}`], value: null };
  const value = objectValue(kids[0]!, errors, '$');
  return { errors, value };
}
