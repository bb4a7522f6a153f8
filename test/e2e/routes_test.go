package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

// writeNDJSON writes lines to a file in dir and returns its path.
func writeNDJSON(dir, name string, lines ...string) string {
	path := filepath.Join(dir, name)
	Expect(os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)).To(Succeed())
	return path
}

var _ = Describe("several origins routed by id prefix", func() {
	It("walks a graph whose refs cross from one origin to the other, and writes to the owner", func() {
		dir := GinkgoT().TempDir()
		users := startOrigin("--seed", "none", "--load", writeNDJSON(dir, "users.ndjson",
			`{"id":"users/1","type":"User","refs":[{"field":"orders","id":"orders/1"},{"field":"orders","id":"orders/2"},{"field":"friend","id":"users/2"}],"payload_text":"ann"}`,
			`{"id":"users/2","type":"User","payload_text":"bob"}`))
		orders := startOrigin("--seed", "none", "--load", writeNDJSON(dir, "orders.ndjson",
			`{"id":"orders/1","type":"Order","refs":[{"field":"buyer","id":"users/1"},{"field":"lines","id":"sku/1"}],"payload_text":"o1"}`,
			`{"id":"orders/2","type":"Order","refs":[{"field":"lines","id":"sku/2"}],"payload_text":"o2"}`,
			`{"id":"sku/1","type":"Sku","payload_text":"s1"}`,
			`{"id":"sku/2","type":"Sku","refs":[{"field":"seller","id":"users/2"}],"payload_text":"s2"}`))
		s := startSidecar("users/="+users.GRPC, "--origin", orders.GRPC)
		Eventually(func() float64 { return s.metric("lookahead_watch_connected") }).Should(Equal(2.0), "one change stream per origin")

		ctx := context.Background()
		var got []string
		missing, err := s.c.GetGraph(ctx, lookahead.Graph{Roots: []string{"users/1"}, Depth: lookahead.Uint32(3)},
			func(r lookahead.Result) error { got = append(got, r.Object.GetId()); return nil })
		Expect(err).NotTo(HaveOccurred())
		Expect(missing).To(BeEmpty(), "a ref to another origin's object is not missing")
		sort.Strings(got)
		Expect(got).To(Equal([]string{"orders/1", "orders/2", "sku/1", "sku/2", "users/1", "users/2"}))
		for _, id := range got {
			_, _, err := s.c.Get(ctx, id, nil)
			Expect(err).NotTo(HaveOccurred(), id)
		}
		Expect(s.metric("lookahead_origin_route_round_trips_total", "origin", "users/")).To(BeNumerically(">", 0))
		Expect(s.metric("lookahead_origin_route_round_trips_total", "origin", "default")).To(BeNumerically(">", 0))

		_, err = s.c.Put(ctx, &lookaheadv1.Object{Id: "users/3", Type: "User", Payload: []byte("cy")})
		Expect(err).NotTo(HaveOccurred())
		direct := startSidecar(users.GRPC) // users' origin alone
		obj, _, err := direct.c.Get(ctx, "users/3", nil)
		Expect(err).NotTo(HaveOccurred(), "the write went to the owner")
		Expect(string(obj.GetPayload())).To(Equal("cy"))
		Expect(s.metric("lookahead_origin_dataset_changes_total")).To(BeZero(), "two origins, two identities, no confusion")
	})
})
