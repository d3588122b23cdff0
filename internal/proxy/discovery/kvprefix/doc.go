// Package kvprefix is the discovery source that reads instance records under a key prefix of an
// etcd v3 API server: etcd itself or Continuum's kv, which speaks the same API. It is the
// registry that users' services write themselves into (see Register), so that a proxy finds them
// without Kubernetes or a hand-edited file.
//
// Layout under the prefix (default "/continuum/services/"):
//
//	<prefix><service>/<instance-id>  {"url": "http://10.0.0.3:8080", "node": "worker3",
//	                                   "attributes": {"accuracy": "0.97"}, "ready": true}
//	<prefix>_nodes/<node>            {"cpu": 0.42, "memory": 0.30}
//
// An instance value is shaped like discovery.Instance; service and id may be left out (the key
// says them) and ready defaults to true. Records that do not parse are skipped and logged with
// their key. A record put with a lease disappears when the lease expires, which is how a crashed
// service leaves the registry: Register keeps such a lease alive for as long as the service runs.
//
// The source lists the prefix, then watches it from the list's revision on, so no change between
// the two is missed; when the watch breaks or its start revision has been compacted away, it
// lists again. It does not write anything except through Register, and knows nothing of how the
// proxy uses the instances.
package kvprefix
