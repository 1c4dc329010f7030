// Checkpoints at the edge, for the workerd runner (worker.mjs): a stateless
// request handler that makes ONE step of a wait per request and answers the
// checkpoint and when to wake, as a Durable Object's alarm handler would
// (storing the checkpoint and setting the alarm to wakeAtMs); the caller plays
// the alarm. Each request has a client of its own, made with TOKEN (a secret
// binding would give it), which no answer may hold.
//   POST /start { ironic, nodes, action, options }  the call's checkpoint, then its first step
//   POST /step  { ironic, checkpoint }              the next step
// Answer: { checkpoint, wakeAtMs, report, error } as step() gives them (the
// report's outcomes only, the error's name and message).
const TOKEN = 'workerd-edge-token-3b7d20c4'; // the test knows it too

export async function handleStep(api, request) {
  const { pathname } = new URL(request.url);
  if (request.method !== 'POST' || !['/start', '/step'].includes(pathname)) return new Response('not found', { status: 404 });
  const body = await request.json();
  try {
    const client = new api.IronicClient({ endpoint: body.ironic, token: TOKEN });
    const checkpoint = pathname === '/start' ? client.checkpoint('provision', body.nodes, body.action, body.options) : body.checkpoint;
    const { checkpoint: next, wakeAtMs, report, error } = await client.step(checkpoint);
    return Response.json({
      checkpoint: next,
      wakeAtMs,
      report: report && { ok: report.ok, nodes: report.nodes.map((n) => [n.node, n.outcome, n.state, n.lastError ?? null]) },
      error: error && { name: error.name, message: error.message, isError: error instanceof api.IronicWaitError },
    });
  } catch (e) {
    return Response.json({ thrown: { name: e?.name, message: e?.message } }, { status: 500 });
  }
}
