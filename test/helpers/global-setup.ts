// Integration suite set-up: nothing yet.
export default async function setup(): Promise<void> {}
