// Errors as people read them: what went wrong, Ironic's own words, and the
// request id to find it in Ironic's logs. Everything the client raises is an
// Error subclass with a `name` (see the package's index.d.ts).
import { byId, el } from './dom.js';

/** `{ title, detail, requestId }` for any thrown value. */
export function describe(err) {
  const name = err?.name ?? typeof err;
  const message = err?.message ?? String(err);
  switch (name) {
    case 'IronicHttpError':
      return { title: `Ironic answered HTTP ${err.status}`, detail: err.detail || message, requestId: err.requestId };
    case 'ConnectionError':
      return { title: 'Ironic cannot be reached', detail: message };
    case 'InvalidResponseError':
      return { title: "Ironic's answer cannot be used", detail: message };
    case 'InvalidArgumentError':
      return { title: 'Not sent: invalid input', detail: message };
    case 'StateTransitionFailed':
      return { title: 'State transition failed', detail: message };
    case 'StateTransitionTimeout':
      return { title: 'Timed out', detail: message };
    case 'AuthError':
      return { title: 'Authentication failed', detail: message };
    case 'UnsupportedVersionError':
      return { title: 'Unsupported Ironic API version', detail: message };
    case 'AbortError':
      return { title: 'Cancelled', detail: message };
    default:
      return { title: name === 'Error' || !name ? 'Error' : name, detail: message };
  }
}

/** One error as a block of text: `context: title`, the detail, the request id. */
export function errorBlock(err, context) {
  const { title, detail, requestId } = describe(err);
  return el('div', { class: 'error-block' }, [
    el('strong', { text: context ? `${context}: ${title}` : title }),
    el('p', { class: 'error-detail', text: detail }),
    requestId ? el('p', { class: 'error-request' }, ['Request ID: ', el('code', { text: requestId })]) : '',
  ]);
}

/** Adds a dismissable message to the page's message area (announced to screen readers). */
export function report(err, context) {
  const list = byId('messages');
  const item = el('li', { class: 'message' }, [errorBlock(err, context)]);
  item.append(el('button', { type: 'button', class: 'quiet', text: 'Dismiss', onclick: () => item.remove() }));
  list.prepend(item);
  while (list.children.length > 5) list.lastElementChild.remove();
}

/** Whatever escapes a handler still reaches the page, not only the console. */
export function catchStrays() {
  window.addEventListener('error', (e) => report(e.error ?? e.message, 'Unexpected error'));
  window.addEventListener('unhandledrejection', (e) => {
    e.preventDefault();
    report(e.reason, 'Unexpected error');
  });
}
