package origin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/metrics"
	"github.com/lookahead-dev/lookahead/internal/origin"
	"github.com/lookahead-dev/lookahead/internal/origintest"
)

// TestLargeRepliesRefusedBeforeDecoding: a reply the size limits will
// refuse is refused from its wire form, before protobuf builds its
// objects (a million refs cost about 13 bytes each on the wire and over a
// hundred decoded).
func TestLargeRepliesRefusedBeforeDecoding(t *testing.T) {
	const limit = 256 << 10                 // MaxObjectBytes; 4 MiB by default
	wide := origintest.Wide("wide", 40_000) // 0.5 MiB on the wire, Size 1.5 MiB: a million refs scaled to the limit
	refused := fmt.Sprintf(`object "wide": %d bytes exceed the limit of 262144 (refused before decoding)`, wide.Size())
	tests := []struct {
		name    string
		call    func(c *origin.Client) error
		wantErr string
	}{
		{name: "BatchGet: the reply's length already says", call: func(c *origin.Client) error {
			_, _, err := c.BatchGet(context.Background(), []string{"wide"})
			return err
		}, wantErr: `object "wide": reply larger than the 263180 bytes that an object of at most 262144 bytes takes (refused before reading it)`},
		{name: "BatchGet: many ids, the object's own size", call: func(c *origin.Client) error {
			ids := []string{"wide"}
			for i := range 9 {
				ids = append(ids, "w"+string(rune('0'+i)))
			}
			_, _, err := c.BatchGet(context.Background(), ids)
			return err
		}, wantErr: refused},
		{name: "Expand", call: func(c *origin.Client) error {
			return c.Expand(context.Background(), []string{"wide"}, nil, graph.Budget{Depth: 1}, func(int, []*graph.Object, []string) error {
				t.Error("nothing of a refused reply is handed over")
				return nil
			})
		}, wantErr: refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := origintest.New(wide)
			m := metrics.New(prometheus.NewRegistry())
			// The connection's limit is origin.Dial's default, as in the sidecar.
			cc := o.Start(t, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(origin.DefaultMaxMessageBytes)))
			c, err := origin.New(cc, origin.Config{MaxObjectBytes: limit}, m)
			require.NoError(t, err)
			err = tt.call(c)
			require.ErrorIs(t, err, origin.ErrMalformedReply)
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Equal(t, map[string]float64{metrics.MalformedOversized: 1}, malformed(m))
		})
	}
}

// TestObjectsWithinTheLimitStillArrive: the limits refuse nothing valid,
// at exactly the largest size.
func TestObjectsWithinTheLimitStillArrive(t *testing.T) {
	const limit = 64 << 10
	fits := origintest.Wide("fits", 1000)
	fits.Payload = []byte(strings.Repeat("p", int(limit-fits.Size())))
	require.Equal(t, int64(limit), fits.Size())
	o := origintest.New(fits)
	c, err := origin.New(o.Start(t), origin.Config{MaxObjectBytes: limit}, metrics.New(prometheus.NewRegistry()))
	require.NoError(t, err)
	found, _, err := c.BatchGet(context.Background(), []string{"fits"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	assert.Len(t, found[0].Refs, 1000)
	n := 0
	require.NoError(t, c.Expand(context.Background(), []string{"fits"}, nil, graph.Budget{}, func(_ int, objs []*graph.Object, _ []string) error {
		n += len(objs)
		return nil
	}))
	assert.Equal(t, 1, n)
}
