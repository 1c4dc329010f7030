// A page that survives its own reload: it deploys NODES against its own
// origin and keeps the wait's checkpoint in localStorage (onCheckpoint); a
// page loaded while a checkpoint is kept resumes it instead of starting
// anew. At the end the checkpoint is dropped and the report kept. What the
// test reads goes on <body data-*>:
//   mode            started | resumed
//   checkpoints     checkpoints written by this page
//   settledAtCheckpoint  the nodes this page saw settle before it wrote its last checkpoint
//   seen            nodes this page has had a progress event of
//   report | error  the outcome
// The client is made with TOKEN, which must never reach storage.
import * as api from 'ironic-wait';

const TOKEN = 'chromium-resume-token-91e4d2a7'; // the test knows it too
const KEY = 'ironic-wait:deploy:checkpoint';
const NODES = ['b1', 'b2', 'b3'];

const data = document.body.dataset;
const saved = localStorage.getItem(KEY);
const client = new api.IronicClient({ endpoint: location.origin, token: TOKEN });
const seen = new Set();
const settled = new Set();
let checkpoints = 0;
const options = {
  onProgress: (e) => {
    seen.add(e.node);
    if (e.done) settled.add(e.node);
    data.seen = JSON.stringify([...seen]);
  },
  onCheckpoint: (checkpoint) => {
    localStorage.setItem(KEY, checkpoint);
    checkpoints += 1;
    data.checkpoints = String(checkpoints);
    data.settledAtCheckpoint = JSON.stringify([...settled]);
  },
};

data.mode = saved ? 'resumed' : 'started';
const call = saved
  ? client.resume(saved, options)
  : client.provision(NODES, 'deploy', { wait: true, timeout: 120, pollInterval: 0.2, settle: 'all', ...options });
call.then(
  (report) => {
    localStorage.removeItem(KEY);
    const outcomes = report.nodes.map((n) => [n.node, n.outcome, n.state, n.lastError ?? null]);
    localStorage.setItem('ironic-wait:deploy:report', JSON.stringify(report));
    data.report = JSON.stringify({ ok: report.ok, nodes: outcomes });
  },
  (e) => {
    data.error = String(e?.stack ?? e);
  },
);
