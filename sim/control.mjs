// The control API under /__sim/: what tests, benchmarks and the console use
// to script the simulator and to read what happened. Plain JSON, no
// microversions; errors are {"error": "..."}.

function reply(res, status, doc, common) {
  if (doc === undefined) {
    res.writeHead(204, common);
    res.end();
    return;
  }
  const body = JSON.stringify(doc);
  res.writeHead(status, { ...common, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

class ControlError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function parseJson(body) {
  try {
    return body === '' ? {} : JSON.parse(body);
  } catch (e) {
    throw new ControlError(400, `invalid JSON: ${e.message}`);
  }
}

/** Route one /__sim request. `sim` is the object createSimulator returns. */
export function handleControl(sim, req, res, path, query, body, common) {
  const q = new URLSearchParams(query);
  const method = req.method;
  const only = (...allowed) => {
    if (!allowed.includes(method)) throw new ControlError(405, `${method} is not allowed on ${path}`);
  };
  let doc;
  try {
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent); // ['__sim', ...]
    const route = parts[1] ?? '';
    sim.world.advance();
    switch (route) {
      case '':
        only('GET');
        doc = sim.summary();
        break;
      case 'scenario':
        only('POST');
        sim.load(parseJson(body));
        doc = sim.summary();
        break;
      case 'reset':
        only('POST');
        sim.reset();
        doc = sim.summary();
        break;
      case 'log':
        only('GET', 'DELETE');
        if (method === 'DELETE') sim.requestLog.clear();
        else
          doc = sim.requests({
            since: Number(q.get('since') ?? 0),
            method: q.get('method') ?? undefined,
            path: q.get('path') ?? undefined,
            node: q.get('node') ?? undefined,
          });
        break;
      case 'history':
        only('GET');
        doc = q.has('node') ? sim.history(q.get('node')) : { nodes: sim.history() };
        if (!doc) throw new ControlError(404, `no node ${q.get('node')} was ever seen`);
        break;
      case 'nodes': {
        const ident = parts[2];
        if (ident === undefined) throw new ControlError(404, 'name a node: /__sim/nodes/{uuid or name}');
        only('GET', 'PATCH', 'DELETE');
        const node = sim.world.findNode(ident);
        if (!node) throw new ControlError(404, `no node ${ident}`);
        if (method === 'PATCH') sim.setNode(ident, parseJson(body));
        if (method === 'DELETE') sim.deleteNode(ident);
        else doc = sim.node(ident);
        break;
      }
      case 'faults':
      case 'transitions': {
        only('GET', 'POST', 'DELETE');
        const rules = sim[route];
        if (method === 'POST') rules.add(parseJson(body));
        if (method === 'DELETE') rules.clear();
        doc = { [route]: rules.list() };
        break;
      }
      case 'clock':
        only('GET', 'POST');
        if (method === 'POST') {
          const { advance, skew, ...rest } = parseJson(body);
          if (Object.keys(rest).length)
            throw new ControlError(400, `unknown clock keys: ${Object.keys(rest).join(', ')} (known: advance, skew)`);
          if (advance !== undefined) sim.advance(advance);
          if (skew !== undefined) sim.skew(skew);
        }
        doc = { now: sim.now(), manual: sim.world.clock.manual, timeScale: sim.world.timeScale, skew: sim.world.skew };
        break;
      case 'churn':
        only('POST');
        doc = sim.churn(parseJson(body));
        break;
      default:
        throw new ControlError(404, `unknown control path ${path}`);
    }
  } catch (e) {
    const status = e instanceof ControlError ? e.status : 400;
    reply(res, status, { error: e.message }, common);
    return;
  }
  reply(res, 200, doc, common);
}
