/**
 * The fault → observed outcome lines of one test file, printed in afterAll: the issue's closing
 * note is copied from them.
 */
export class Summary {
  readonly lines: string[] = [];
  constructor(readonly title: string) {}
  add(fault: string, outcome: string): void {
    this.lines.push(`${fault} → ${outcome}`);
  }
  print(): void {
    if (this.lines.length) console.log(`\n${this.title}\n${this.lines.map((l) => `- ${l}`).join('\n')}`);
  }
}
