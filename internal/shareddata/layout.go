package shareddata

import (
	"fmt"
	"strconv"
)

// Key layouts. Names are checked by ValidName, so they never contain '/', '{', '}' or ':'
// and every key below parses back unambiguously.
//
// etcd and kv (seeds/000 Fig. 4: trees, notification by watch):
//
//	/metrics/<group>/<producer>           a producer's newest metrics; consumers watch /metrics/<group>/
//	/ctrl/<group>/<producer>/<consumer>   a consumer's control for a producer; the producer watches /ctrl/<group>/<producer>/
//	/state/<consumer>/head, .../tail      the state queue's indices (decimal)
//	/state/<consumer>/q/<index>           its entries, index zero-padded to 20 digits so keys sort by index
//	/sdl/<ns>/k/<key>                     SDL data
//	/sdl/<ns>/g/<group>/<member>          SDL group membership (empty value)
//	/sdl/<ns>/e/<channel>                 SDL events: each publication is a put, subscribers watch /sdl/<ns>/e/
//
// Redis (seeds/000 Fig. 5: keys, and streams read with XREAD for notification). A hash tag
// {..} puts what one atomic operation touches in one Redis Cluster slot: a group's metrics
// stream, a producer's control stream, a consumer's state queue, an SDL namespace (SDL's
// own "{ns},key" format).
//
//	metrics:{<group>}                     stream of metrics, entries n=<producer> v=<value> s=<number>
//	ctrl:{<group>}:<producer>             stream of control, entries n=<consumer> v=<value> s=<number>
//	<stream>#seq                          the stream's publication counter (s of its newest entry)
//	state:{<consumer>}:head, ...:tail     the state queue's indices
//	state:{<consumer>}:<index>            its entries
//	{<ns>},<key>                          SDL data
//	{<ns>}#g,<group>                      SDL group (a Redis set)
//	{<ns>}#e,<channel>                    SDL events (a stream, entries n=<channel> v=<data> s=<number>
//	                                      p=<publication> i=<index in it>)
//	{<ns>}#p                              the namespace's publication counter (p of the newest)

const stateIndexDigits = 20

func etcdMetricsPrefix(group string) string        { return "/metrics/" + group + "/" }
func etcdMetricsKey(group, producer string) string { return etcdMetricsPrefix(group) + producer }
func etcdCtrlPrefix(group, producer string) string { return "/ctrl/" + group + "/" + producer + "/" }
func etcdCtrlKey(group, producer, consumer string) string {
	return etcdCtrlPrefix(group, producer) + consumer
}
func etcdStatePrefix(consumer string) string { return "/state/" + consumer + "/" }
func etcdStateHead(consumer string) string   { return etcdStatePrefix(consumer) + "head" }
func etcdStateTail(consumer string) string   { return etcdStatePrefix(consumer) + "tail" }
func etcdStateQueue(consumer string) string  { return etcdStatePrefix(consumer) + "q/" }
func etcdStateEntry(consumer string, index int64) string {
	return fmt.Sprintf("%s%0*d", etcdStateQueue(consumer), stateIndexDigits, index)
}
func etcdSDLData(ns string) string                  { return "/sdl/" + ns + "/k/" }
func etcdSDLGroup(ns, group string) string          { return "/sdl/" + ns + "/g/" + group + "/" }
func etcdSDLEvents(ns string) string                { return "/sdl/" + ns + "/e/" }
func redisMetricsStream(group string) string        { return "metrics:{" + group + "}" }
func redisCtrlStream(group, producer string) string { return "ctrl:{" + group + "}:" + producer }
func redisStatePrefix(consumer string) string       { return "state:{" + consumer + "}:" }
func redisStateHead(consumer string) string         { return redisStatePrefix(consumer) + "head" }
func redisStateTail(consumer string) string         { return redisStatePrefix(consumer) + "tail" }
func redisSDLData(ns string) string                 { return "{" + ns + "}," }
func redisSDLGroup(ns, group string) string         { return "{" + ns + "}#g," + group }
func redisSDLEvents(ns, channel string) string      { return "{" + ns + "}#e," + channel }
func redisSDLPublications(ns string) string         { return "{" + ns + "}#p" }
func redisStateEntry(consumer string, i int64) string {
	return redisStatePrefix(consumer) + strconv.FormatInt(i, 10)
}
