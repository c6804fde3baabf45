// The one function of cluster-key-slot the service calls (the package ships no types): the Redis Cluster slot of a
// key, by the same code as ioredis's own map of slots.
declare module 'cluster-key-slot' {
  function calculateSlot (key: string | Buffer): number
  export default calculateSlot
}
