package tracing

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		ok       bool
	}{
		{"", true}, {"http://collector:4317", true}, {"https://collector.example:4317", true},
		{"collector:4317", false}, {"ftp://collector:21", false}, {"http://", false}, {"http://%zz", false},
	} {
		t.Run(tt.endpoint, func(t *testing.T) {
			err := Config{Endpoint: tt.endpoint}.Validate()
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "want http://host:port")
			}
		})
	}
}

// TestOffAddsNothing: without an endpoint there is no Tracing, and a nil
// one installs no gRPC options and no tracer.
func TestOffAddsNothing(t *testing.T) {
	tr, err := New(context.Background(), Config{})
	require.NoError(t, err)
	assert.Nil(t, tr)
	assert.Empty(t, tr.ServerOptions())
	assert.Empty(t, tr.DialOptions())
	assert.Nil(t, tr.Tracer("x"))
	assert.NoError(t, tr.Close(context.Background()))
}

// TestOnExportsLazily: an endpoint nobody listens on starts tracing all the
// same (it connects when it has spans to send), and Close stops every
// goroutine it started (goleak checks).
func TestOnExportsLazily(t *testing.T) {
	tr, err := New(context.Background(), Config{Endpoint: "http://127.0.0.1:1", Service: "test"})
	require.NoError(t, err)
	require.NotNil(t, tr)
	assert.Len(t, tr.ServerOptions(), 1)
	assert.Len(t, tr.DialOptions(), 1)
	assert.NotNil(t, tr.Tracer("x"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tr.Close(ctx)
}
