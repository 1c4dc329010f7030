// The scenario's runner for Cloudflare workerd: a module Worker, bundled by
// wrangler from a consumer project; GET /?ironic=URL runs the scenario and
// answers the report; POST /start and /step are edge-step.mjs's.
import * as api from 'ironic-wait';
import { handleStep } from './edge-step.mjs';
import { runScenario } from './scenario.mjs';

export default {
  async fetch(request) {
    if (new URL(request.url).pathname !== '/') return handleStep(api, request);
    const url = new URL(request.url).searchParams.get('ironic');
    return Response.json(await runScenario(api, { url }));
  },
};
