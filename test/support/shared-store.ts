// One store shared by the tests of a file (PGlite starts in seconds, not milliseconds), seen by each test through a
// view of its own: what a test replaces on it (vi.spyOn) stays on its view, and closing the view leaves the store open.
// `ready` (the store being emptied for the test) is awaited before each call the view passes on.
import type { SoulsStore } from '../../src/store/store.ts';

export function storeView<S extends SoulsStore>(store: S, onClose: () => void = () => {}, ready: Promise<unknown> | null = null): S {
  const own = new Map<PropertyKey, PropertyDescriptor>();
  return new Proxy(store, {
    get(target, key) {
      const replaced = own.get(key);
      if (replaced) return replaced.get ? replaced.get.call(target) : replaced.value;
      if (key === 'close') {
        return () => {
          onClose();
          return { checkpointDeferred: null };
        };
      }
      const value = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      if (ready === null || key === 'statementsExecuted') return value.bind(target);
      return (...args: unknown[]) => ready.then(() => value.apply(target, args));
    },
    defineProperty(_, key, descriptor) {
      own.set(key, descriptor);
      return true;
    },
    getOwnPropertyDescriptor(target, key) {
      return own.get(key) ?? Reflect.getOwnPropertyDescriptor(target, key);
    },
    deleteProperty(_, key) {
      return own.delete(key);
    },
  });
}
