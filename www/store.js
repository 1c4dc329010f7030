// The hub's memory across reloads and browser restarts: one IndexedDB record
// per running wait, holding the wait's latest checkpoint (the package's JSON
// text: endpoint, method, options, nodes and their progress; never a
// credential) and what the panels need to show it again (the action, node
// names). The console server's token is not in it: the hub keeps that in
// memory only. IndexedDB rather than localStorage: workers have only it, and
// checkpoints of 10,000 nodes are hundreds of KB.

const DB_NAME = 'ironic-wait-console';
const STORE = 'waits';

/** Opens the database; resolves to a store, or null where IndexedDB is missing or refused (private modes). */
export async function openStore() {
  if (typeof indexedDB === 'undefined') return null;
  const db = await new Promise((resolve) => {
    let request;
    try {
      request = indexedDB.open(DB_NAME, 1);
    } catch {
      resolve(null);
      return;
    }
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: 'id' });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => resolve(null);
    request.onblocked = () => resolve(null);
  });
  if (!db) return null;
  // Someone deleting or upgrading the database (a test clearing it, a newer
  // console): let them, and stop keeping records here.
  db.onversionchange = () => db.close();

  const run = (mode, body) =>
    new Promise((resolve, reject) => {
      let tx;
      try {
        tx = db.transaction(STORE, mode);
      } catch (e) {
        reject(e);
        return;
      }
      const result = body(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(result?.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
    });

  return {
    all: () => run('readonly', (s) => s.getAll()),
    get: (id) => run('readonly', (s) => s.get(id)),
    put: (record) => run('readwrite', (s) => s.put(record)),
    delete: (id) => run('readwrite', (s) => s.delete(id)),
  };
}

/**
 * Writes one wait's record as it changes, one write at a time: a checkpoint
 * arriving while one is being written replaces any still waiting (only the
 * newest matters), and `end()` deletes the record after the write under way,
 * so a late write cannot bring a finished wait back.
 */
export function recordWriter(store, record) {
  let pending = null;
  let pump = null; // the loop writing, while one runs
  let ended = false;
  let writes = 0;
  const run = async () => {
    while (pending && !ended) {
      const next = pending;
      pending = null;
      try {
        await store.put(next);
        writes += 1;
      } catch {
        // A full or closed database: the wait goes on, only unkept.
      }
    }
    pump = null;
  };
  return {
    /** Stores `checkpoint` with the record's other fields; resolves once it (or a newer one) is written. */
    save(checkpoint) {
      if (!store || ended) return Promise.resolve();
      pending = { ...record, checkpoint, savedAt: Date.now() };
      pump ??= run();
      return pump;
    },
    /** Deletes the record once the write under way is done. */
    async end() {
      ended = true;
      pending = null;
      if (!store) return;
      await pump;
      await store.delete(record.id).catch(() => {});
    },
    /** Checkpoints written so far. */
    get writes() {
      return writes;
    },
  };
}
