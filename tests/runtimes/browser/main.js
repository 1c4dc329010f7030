// The scenario's runner in a browser page (built by vite, or loaded through
// an import map): runs it in the page, or with #worker in a module Web
// Worker, against the page's own origin. The report (or the error) and any
// CSP violation go on <body data-*> for the test to read.
import * as api from 'ironic-wait';
import { runScenario } from './scenario.mjs';

const violations = [];
const violated = (v) => violations.push(`${v.effectiveDirective} refused ${v.blockedURI || 'inline code'}`);
document.addEventListener('securitypolicyviolation', violated);
const done = (report) => {
  document.body.dataset.violations = JSON.stringify(violations);
  document.body.dataset.report = JSON.stringify(report);
};
const fail = (e) => {
  document.body.dataset.error = String(e?.stack ?? e);
};

if (location.hash === '#worker') {
  const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = (e) => {
    violations.push(...e.data.violations);
    if (e.data.report) done(e.data.report);
    else fail(e.data.error);
  };
  worker.onerror = (e) => fail(`the worker failed: ${e.message ?? 'it could not load'}`);
} else {
  runScenario(api, { url: location.origin }).then(done, fail);
}
