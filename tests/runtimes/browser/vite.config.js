// The vite project's one setting: module workers are bundled as ES modules.
// Vite's default worker format, 'iife', cannot hold the top-level await
// with which the package's browser entry loads its wasm.
export default {
  worker: { format: 'es' },
};
