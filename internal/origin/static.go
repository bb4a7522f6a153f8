package origin

import (
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc/resolver"
)

// StaticScheme names a fixed list of replicas in a target:
// "static:///10.0.0.1:7071,10.0.0.2:7071", for replicas without a DNS
// name that resolves to all of them.
const StaticScheme = "static"

// staticBuilder resolves a static target to its addresses, once.
type staticBuilder struct{}

func (staticBuilder) Scheme() string { return StaticScheme }

func (staticBuilder) Build(t resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	var addrs []resolver.Address
	for _, a := range strings.Split(t.Endpoint(), ",") {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("static target %q: address %q: %w", t.URL.String(), a, err)
		}
		addrs = append(addrs, resolver.Address{Addr: a})
	}
	if err := cc.UpdateState(resolver.State{Addresses: addrs}); err != nil {
		return nil, fmt.Errorf("static target %q: %w", t.URL.String(), err)
	}
	return staticResolver{}, nil
}

// staticResolver has nothing to re-resolve.
type staticResolver struct{}

func (staticResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (staticResolver) Close()                                {}
