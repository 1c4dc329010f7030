// The scenario's runner for Cloudflare workerd: a module Worker, bundled by
// wrangler from a consumer project; GET /?ironic=URL runs the scenario and
// answers the report.
import * as api from 'ironic-wait';
import { runScenario } from './scenario.mjs';

export default {
  async fetch(request) {
    const url = new URL(request.url).searchParams.get('ironic');
    return Response.json(await runScenario(api, { url }));
  },
};
