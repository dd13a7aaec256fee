/**
 * `a2a-mailbridge completion <bash|zsh|fish>`: a shell completion script generated from the
 * commander program itself (its commands, subcommands, options and arguments), so it can never
 * list a command or option the program does not have. Values are completed from the same tables
 * the program checks against (task states, verdicts, log levels, an argument's choices); paths
 * for `--config`, `--db`, `--dir` and `<file>` arguments.
 *
 * Each script finds the command path typed so far the same way: the words that are not options
 * and not the value of an option that takes one, as long as they name a known (sub)command.
 */
import type { Command } from 'commander';
import { TASK_STATES } from '../store/task-state.js';
import { VERDICTS } from '../uplink/verdicts.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** One option as the scripts need it. */
interface OptionModel {
  long: string;
  short?: string;
  description: string;
  takesValue: boolean;
  /** Values to offer, `file`/`dir` for paths, or none. */
  values: readonly string[] | 'file' | 'dir' | null;
}

/** One (sub)command: its path from the program (`service install`), what it holds and takes. */
interface CommandModel {
  path: string;
  description: string;
  subcommands: { name: string; description: string }[];
  options: OptionModel[];
  /** Values for its positional argument(s), `file`, or none. */
  argValues: readonly string[] | 'file' | null;
}

const STATE_WORDS = [...TASK_STATES.map((s) => s.toLowerCase().replaceAll('_', '-')), 'open', 'finished'];
const VERDICT_WORDS = [...Object.keys(VERDICTS), 'auth:', 'applied:'];

/** Values of options that commander does not know as choices: by long name. */
const OPTION_VALUES: Record<string, readonly string[] | 'file' | 'dir'> = {
  '--config': 'file',
  '--db': 'file',
  '--dir': 'dir',
  '--state': STATE_WORDS,
  '--verdict': VERDICT_WORDS,
  '--log-level': ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
};

/** Values of positional arguments commander does not know as choices: by `<command path> <argument name>`. */
const ARGUMENT_VALUES: Record<string, readonly string[] | 'file'> = {
  'backup file': 'file',
  'secret new name': ['bearer', 'webhook-secret'],
};

function optionsOf(cmd: Command): OptionModel[] {
  const out: OptionModel[] = cmd.options.map((o) => ({
    long: o.long ?? '',
    ...(o.short ? { short: o.short } : {}),
    description: o.description,
    takesValue: o.required || o.optional,
    values: o.argChoices ?? (o.long ? (OPTION_VALUES[o.long] ?? null) : null),
  }));
  out.push({ long: '--help', short: '-h', description: 'display help for command', takesValue: false, values: null });
  return out.filter((o) => o.long !== '');
}

/** Every command of the program, depth first, the program itself first (path ''). */
export function commandModels(program: Command): CommandModel[] {
  const out: CommandModel[] = [];
  const walk = (cmd: Command, path: string): void => {
    const arg = cmd.registeredArguments[0];
    out.push({
      path,
      description: cmd.description(),
      subcommands: cmd.commands.map((c) => ({ name: c.name(), description: c.description() })),
      options: optionsOf(cmd),
      argValues: arg ? (arg.argChoices ?? ARGUMENT_VALUES[`${path} ${arg.name()}`] ?? null) : null,
    });
    for (const c of cmd.commands) walk(c, path ? `${path} ${c.name()}` : c.name());
  };
  walk(program, '');
  return out;
}

/** Every long and short option that takes a value, anywhere in the program: the scripts skip the word after it. */
function valueOptions(models: readonly CommandModel[]): string[] {
  const set = new Set<string>();
  for (const m of models) for (const o of m.options) if (o.takesValue) for (const f of [o.long, o.short]) if (f) set.add(f);
  return [...set].sort();
}

/** Single-quoted for sh, bash, zsh and fish: no expansion inside. */
function q(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function bash(name: string, models: readonly CommandModel[]): string {
  const fn = `_${name.replaceAll('-', '_')}`;
  const skip = valueOptions(models).join('|');
  const paths = models.filter((m) => m.path !== '').map((m) => m.path);
  const words = (m: CommandModel): string => [...m.subcommands.map((s) => s.name), ...m.options.flatMap((o) => [o.long])].join(' ');
  const valueCases = models
    .flatMap((m) => m.options)
    .filter((o, i, all) => o.takesValue && o.values !== null && all.findIndex((x) => x.long === o.long) === i)
    .map((o) => {
      const flags = [o.long, o.short].filter(Boolean).join('|');
      if (o.values === 'file') return `    ${flags}) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;`;
      if (o.values === 'dir') return `    ${flags}) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;`;
      return `    ${flags}) COMPREPLY=($(compgen -W ${q((o.values as readonly string[]).join(' '))} -- "$cur")); return ;;`;
    });
  const pathCases = models.map((m) => {
    const arg =
      m.argValues === 'file'
        ? `      if [[ "$cur" != -* ]]; then compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return; fi\n`
        : m.argValues !== null
          ? `      if [[ "$cur" != -* && $nargs -eq 0 ]]; then COMPREPLY=($(compgen -W ${q(m.argValues.join(' '))} -- "$cur")); return; fi\n`
          : '';
    return `    ${q(m.path)})\n${arg}      words=${q(words(m))} ;;`;
  });
  return `# bash completion for ${name}; generated by \`${name} completion bash\` from the program itself.
# Install: ${name} completion bash > ~/.local/share/bash-completion/completions/${name}
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local path="" candidate w i nargs=0 words=""
  local known=${q(`|${paths.join('|')}|`)}
${walkWords('COMP_WORDS', 1, 'COMP_CWORD', skip)}  case "$prev" in
${valueCases.join('\n')}
  esac
  case "$path" in
${pathCases.join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F ${fn} ${name}
`;
}

/**
 * The shell loop shared by the bash and zsh scripts: walks the words before the cursor
 * (`array[first]` … `array[end - 1]`), skipping each value-taking option's value (`skip`, a
 * `|`-joined case pattern), and leaves in `path` the longest known command path and in `nargs` the
 * count of positional arguments after it. Both shells take this `for ((…))` and `case` syntax alike.
 */
function walkWords(array: string, first: number, end: string, skip: string): string {
  return `  for ((i = ${first}; i < ${end}; i++)); do
    w="\${${array}[i]}"
    case "$w" in
      ${skip}) ((i++)) ;;
      -*) ;;
      *)
        candidate="\${path:+$path }$w"
        if [[ "$known" == *"|$candidate|"* ]]; then path="$candidate"; else ((nargs++)); fi ;;
    esac
  done
`;
}

function zsh(name: string, models: readonly CommandModel[]): string {
  const fn = `_${name.replaceAll('-', '_')}`;
  const skip = valueOptions(models).join('|');
  const paths = models.filter((m) => m.path !== '').map((m) => m.path);
  const desc = (s: string): string => s.replaceAll(':', '\\:');
  const valueCases = models
    .flatMap((m) => m.options)
    .filter((o, i, all) => o.takesValue && o.values !== null && all.findIndex((x) => x.long === o.long) === i)
    .map((o) => {
      const flags = [o.long, o.short].filter(Boolean).join('|');
      if (o.values === 'file') return `    ${flags}) _files; return ;;`;
      if (o.values === 'dir') return `    ${flags}) _files -/; return ;;`;
      return `    ${flags}) compadd -- ${(o.values as readonly string[]).map(q).join(' ')}; return ;;`;
    });
  const pathCases = models.map((m) => {
    const subs = m.subcommands.map((s) => q(`${s.name}:${desc(s.description)}`)).join(' ');
    const opts = m.options.map((o) => q(`${o.long}:${desc(o.description)}`)).join(' ');
    const arg =
      m.argValues === 'file'
        ? `      if [[ "$cur" != -* ]]; then _files; return; fi\n`
        : m.argValues !== null
          ? `      if [[ "$cur" != -* && $nargs -eq 0 ]]; then compadd -- ${m.argValues.map(q).join(' ')}; return; fi\n`
          : '';
    return `    ${q(m.path)})\n${arg}      subs=(${subs}); opts=(${opts}) ;;`;
  });
  return `#compdef ${name}
# zsh completion for ${name}; generated by \`${name} completion zsh\` from the program itself.
# Install: ${name} completion zsh > ~/.zfunc/_${name}, with fpath=(~/.zfunc $fpath) in ~/.zshrc before
# compinit runs; then start a new shell (README, "Install and configure").
${fn}() {
  local cur="\${words[CURRENT]}" prev="\${words[CURRENT-1]}"
  local path="" candidate w i nargs=0
  local -a subs opts
  local known=${q(`|${paths.join('|')}|`)}
${walkWords('words', 2, 'CURRENT', skip)}  case "$prev" in
${valueCases.join('\n')}
  esac
  case "$path" in
${pathCases.join('\n')}
  esac
  if [[ "$cur" == -* ]]; then _describe -t options option opts; else _describe -t commands command subs; fi
}
if [[ "\${funcstack[1]}" == "${fn}" ]]; then ${fn} "$@"; else compdef ${fn} ${name}; fi
`;
}

function fish(name: string, models: readonly CommandModel[]): string {
  const fn = `__${name.replaceAll('-', '_')}`;
  const skip = valueOptions(models);
  const paths = models.filter((m) => m.path !== '').map((m) => m.path);
  const lines = [
    `# fish completion for ${name}; generated by \`${name} completion fish\` from the program itself.`,
    `# Install: ${name} completion fish > ~/.config/fish/completions/${name}.fish`,
    `function ${fn}_path --description 'the ${name} command path typed so far'`,
    '    set -l tokens (commandline -opc)',
    '    set -e tokens[1]',
    `    set -l known ${paths.map(q).join(' ')}`,
    '    set -l path',
    '    set -l skip 0',
    '    for t in $tokens',
    '        if test $skip = 1',
    '            set skip 0',
    '            continue',
    '        end',
    '        switch $t',
    `            case ${skip.map(q).join(' ')}`,
    '                set skip 1',
    "            case '-*'",
    "            case '*'",
    '                set -l candidate (string join " " $path $t)',
    '                if contains -- $candidate $known',
    '                    set path $path $t',
    '                end',
    '        end',
    '    end',
    '    string join " " $path',
    'end',
    `function ${fn}_at --description 'true when the command path typed so far is $argv[1]'`,
    `    set -l path (${fn}_path)`,
    '    test "$path" = "$argv[1]"',
    'end',
    `complete -c ${name} -f`,
  ];
  for (const m of models) {
    const when = `-n ${q(`${fn}_at ${q(m.path)}`)}`;
    for (const s of m.subcommands) lines.push(`complete -c ${name} ${when} -a ${q(s.name)} -d ${q(s.description)}`);
    for (const o of m.options) {
      const flags = `-l ${o.long.replace(/^--/, '')}${o.short ? ` -s ${o.short.replace(/^-/, '')}` : ''}`;
      const value = !o.takesValue ? '' : o.values === 'file' || o.values === 'dir' ? ' -r -F' : o.values ? ` -x -a ${q(o.values.join(' '))}` : ' -x';
      lines.push(`complete -c ${name} ${when} ${flags}${value} -d ${q(o.description)}`);
    }
    if (m.argValues === 'file') lines.push(`complete -c ${name} ${when} -F`);
    else if (m.argValues) lines.push(`complete -c ${name} ${when} -a ${q(m.argValues.join(' '))}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The completion script for `shell`, from `program` as main.ts builds it. */
export function completionScript(program: Command, shell: Shell): string {
  const models = commandModels(program);
  const name = program.name();
  return shell === 'bash' ? bash(name, models) : shell === 'zsh' ? zsh(name, models) : fish(name, models);
}
