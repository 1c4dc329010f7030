// The scenario's runner in a module Web Worker: runs it as soon as it is
// loaded and posts the report to its page.
import * as api from 'ironic-wait';
import { runScenario } from './scenario.mjs';

const violations = [];
self.addEventListener('securitypolicyviolation', (v) =>
  violations.push(`${v.effectiveDirective} refused ${v.blockedURI || 'inline code'}`),
);
// The simulator shares the page's origin.
runScenario(api, { url: self.location.origin }).then(
  (report) => self.postMessage({ report, violations }),
  (error) => self.postMessage({ error: String(error?.stack ?? error), violations }),
);
