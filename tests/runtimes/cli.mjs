// The scenario's runner for Node and Deno: `node cli.mjs URL`,
// `deno run --allow-net=HOST:PORT cli.mjs URL`, from a consumer project
// where ironic-wait is installed. Prints the report as one JSON line.
import * as api from 'ironic-wait';
import { runScenario } from './scenario.mjs';

const url = globalThis.Deno ? globalThis.Deno.args[0] : process.argv[2];
console.log(JSON.stringify(await runScenario(api, { url })));
