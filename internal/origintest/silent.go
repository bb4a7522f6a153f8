package origintest

import (
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// SilentProxy serves a TCP proxy in front of upstream until the test ends
// and returns its address, and silence, which makes it drop everything,
// both ways, from then on without closing a connection: a host that
// vanished, or a partition that drops packets. Only keepalive pings find
// such a peer gone.
func SilentProxy(t T, upstream string) (addr string, silence func()) {
	t.Helper()
	zerolog.SetGlobalLevel(zerolog.WarnLevel) // toxiproxy's toxics log through zerolog's global logger
	proxy := toxiproxy.NewProxy(toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), "silent", "127.0.0.1:0", upstream)
	if err := proxy.Start(); err != nil {
		t.Fatalf("origintest: proxy: %v", err)
	}
	t.Cleanup(proxy.Stop)
	return proxy.Listen, func() {
		for _, stream := range []string{"upstream", "downstream"} {
			toxic := `{"name": "gone_` + stream + `", "type": "timeout", "stream": "` + stream + `", "attributes": {"timeout": 0}}`
			if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
				t.Fatalf("origintest: silence the proxy: %v", err)
			}
		}
	}
}
