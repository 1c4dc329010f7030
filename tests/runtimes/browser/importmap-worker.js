// The module Web Worker of the import-map page. A worker does not see its
// page's import map (Chromium 156), so it imports the package's browser
// entry by its path, as a page without a bundler would.
import * as api from './node_modules/ironic-wait/pkg/web.js';
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
