package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/lookahead-dev/lookahead/internal/launch"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/pgtest"
	"github.com/lookahead-dev/lookahead/internal/store/postgres/shop"
)

// startPostgresOrigin runs the origin over a throwaway PostgreSQL holding
// a small sample shop, mapped read-only.
func startPostgresOrigin() *launch.Process {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg, err := pgtest.Start(ctx)
	Expect(err).NotTo(HaveOccurred(), "PostgreSQL's server binaries come from Debian's postgresql package")
	DeferCleanup(pg.Stop)
	url, err := pg.CreateDB(ctx, "shop")
	Expect(err).NotTo(HaveOccurred())
	conn, err := pgx.Connect(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	_, err = shop.Load(ctx, conn, shop.Size{Customers: 20, Products: 10, Orders: 50, Seed: 1})
	Expect(conn.Close(ctx)).To(Succeed())
	Expect(err).NotTo(HaveOccurred())
	mapping := filepath.Join(GinkgoT().TempDir(), "mapping.yaml")
	Expect(os.WriteFile(mapping, shop.Mapping, 0o644)).To(Succeed())
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "origin"), "postgres-install", "--store", url, "--mapping", mapping).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "origin postgres-install: %s", out)
	p := start(filepath.Join(bin, "origin"), "--listen", "127.0.0.1:0", "--metrics-listen", "", "--store", url, "--mapping", mapping)
	Expect(p.WaitServing(ctx)).To(Succeed())
	return p
}

var _ = Describe("the conformance checker against the PostgreSQL origin", func() {
	// The write checks need an origin that takes any id under --prefix;
	// the shop's ids have their tables' formats, so they run read-only.
	It("passes every read-only check over the sample shop", func() {
		o := startPostgresOrigin()
		out, code := check("--target", o.GRPC)
		Expect(code).To(Equal(0), out)
		Expect(out).To(MatchRegexp(`\n\d+ passed, 0 failed, \d+ skipped\n$`))
		Expect(out).To(MatchRegexp(`describe/identity-stable +PASS`))
		Expect(out).To(MatchRegexp(`watch/announces-revision +PASS`))
	})
})
