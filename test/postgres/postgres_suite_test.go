// Package postgres runs the real origin over a throwaway PostgreSQL with the
// sample shop, and a real sidecar in front of it.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead"
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/scrape"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

func TestPostgres(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "lookahead over PostgreSQL")
}

var (
	bin     string
	cluster *pgtest.Cluster
	dbs     int
)

var _ = BeforeSuite(func() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtest.Start(ctx)
	if errors.Is(err, pgtest.ErrNoBinaries) && os.Getenv("CI") != "true" {
		Skip("no PostgreSQL server binaries (CI must have them)")
	}
	Expect(err).NotTo(HaveOccurred())
	cluster = c
	DeferCleanup(func() { Expect(cluster.Stop()).To(Succeed()) })
	bin = GinkgoT().TempDir()
	Expect(launch.Build("../..", bin, "origin", "sidecar")).To(Succeed())
})

// shopDB creates a database with a small shop, installs the change log
// with the origin's own command and returns its URL and the mapping file.
func shopDB(ctx context.Context) (url, mapping string) {
	dbs++
	url, err := cluster.CreateDB(ctx, fmt.Sprintf("shop%d", dbs))
	Expect(err).NotTo(HaveOccurred())
	conn, err := pgx.Connect(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	_, err = shop.Load(ctx, conn, shop.Size{Customers: 10, Products: 10, Orders: 30, Seed: 1})
	Expect(conn.Close(ctx)).To(Succeed())
	Expect(err).NotTo(HaveOccurred())
	mapping = filepath.Join(GinkgoT().TempDir(), "mapping.yaml")
	Expect(os.WriteFile(mapping, shop.Mapping, 0o644)).To(Succeed())
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "origin"), "postgres-install", "--store", url, "--mapping", mapping).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	return url, mapping
}

func start(ctx context.Context, name string, args ...string) *launch.Process {
	p, err := launch.Start(ctx, filepath.Join(bin, name), args, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = p.Stop(10 * time.Second) })
	Expect(p.WaitServing(ctx)).To(Succeed())
	return p
}

// stack is an origin over a fresh shop database and a sidecar in front.
type stack struct {
	url, mapping string
	origin       *launch.Process
	sidecar      *launch.Process
	c            *lookahead.Client
}

func newStack(ctx context.Context) *stack {
	s := &stack{}
	s.url, s.mapping = shopDB(ctx)
	s.origin = s.startOrigin(ctx, "127.0.0.1:0")
	sc := start(ctx, "sidecar", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--origin", s.origin.GRPC,
		"--health-interval", "50ms", "--watch-grace", "1s")
	c, err := lookahead.Dial(sc.GRPC)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	s.c, s.sidecar = c, sc
	return s
}

func (s *stack) startOrigin(ctx context.Context, listen string) *launch.Process {
	return start(ctx, "origin", "--listen", listen, "--metrics-listen", "", "--store", s.url, "--mapping", s.mapping)
}

func (s *stack) exec(ctx context.Context, sql string) {
	conn, err := pgx.Connect(ctx, s.url)
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("the PostgreSQL origin behind a sidecar", func() {
	It("serves rows as objects and follows SQL writes through Watch", func(ctx SpecContext) {
		s := newStack(ctx)
		obj, _, err := s.c.Get(ctx, "orders/7", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.GetType()).To(Equal("order"))
		Expect(obj.GetVersion()).To(BeEquivalentTo(1))
		_, st, err := s.c.Get(ctx, "orders/7", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Cache).To(Equal(lookaheadv1.CacheStatus_CACHE_STATUS_HIT), "cached")

		s.exec(ctx, "UPDATE orders SET status = 'shipped' WHERE id = 7")
		Eventually(func(g Gomega) {
			obj, _, err := s.c.Get(ctx, "orders/7", nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(obj.GetVersion()).To(BeEquivalentTo(2))
			g.Expect(string(obj.GetPayload())).To(ContainSubstring(`"status" : "shipped"`))
		}).WithContext(ctx).Should(Succeed(), "the change reached the sidecar through Watch")
	}, SpecTimeout(2*time.Minute))

	It("answers UNAVAILABLE while the database is down and recovers when it is back", func(ctx SpecContext) {
		s := newStack(ctx)
		_, _, err := s.c.Get(ctx, "customers/1", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cluster.StopServer(ctx)).To(Succeed())
		restarted := false
		DeferCleanup(func(ctx SpecContext) {
			if !restarted {
				Expect(cluster.StartServer(ctx)).To(Succeed())
			}
		})
		_, _, err = s.c.Get(ctx, "customers/2", nil)
		Expect(status.Code(err)).To(Equal(codes.Unavailable), "%v", err)

		Expect(cluster.StartServer(ctx)).To(Succeed())
		restarted = true
		Eventually(func() error {
			_, _, err := s.c.Get(ctx, "customers/2", nil)
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	}, SpecTimeout(3*time.Minute))

	It("resets the sidecar when it resumes from a revision the change log compacted away", func(ctx SpecContext) {
		s := newStack(ctx)
		obj, _, err := s.c.Get(ctx, "customers/3", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.GetVersion()).To(BeEquivalentTo(1))
		s.exec(ctx, "UPDATE products SET price_cents = 1 WHERE id = 1") // revision 1, which the sidecar applies
		Eventually(func(g Gomega) float64 {
			m, err := scrape.Fetch(ctx, s.sidecar.MetricsURL())
			g.Expect(err).NotTo(HaveOccurred())
			return m.Sum("lookahead_watch_changes_total")
		}).WithContext(ctx).Should(BeNumerically(">=", 1))

		// The origin goes away; meanwhile customer 3 changes and the change
		// log is compacted past it, so the change can never be delivered.
		addr := s.origin.GRPC
		Expect(s.origin.Stop(10 * time.Second)).To(Succeed())
		s.exec(ctx, "UPDATE customers SET name = 'Moved' WHERE id = 3")
		s.exec(ctx, "SELECT lookahead.compact(1000)")
		s.startOrigin(ctx, addr)

		Eventually(func(g Gomega) {
			obj, _, err := s.c.Get(ctx, "customers/3", nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(obj.GetVersion()).To(BeEquivalentTo(2))
			g.Expect(string(obj.GetPayload())).To(ContainSubstring("Moved"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "OUT_OF_RANGE on resume cleared the stale copy")
	}, SpecTimeout(3*time.Minute))
})
