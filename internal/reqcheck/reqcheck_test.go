package reqcheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

func TestIDs(t *testing.T) {
	long := strings.Repeat("x", graph.MaxIDBytes+1)
	for _, tc := range []struct {
		name string
		ids  []string
		want string // "" = valid
	}{
		{"valid", []string{"a", "b"}, ""},
		{"none", nil, ""},
		{"empty", []string{"a", ""}, "ids[1]: empty id"},
		{"too long", []string{long}, fmt.Sprintf("ids[0]: id of %d bytes exceeds the limit of %d", len(long), graph.MaxIDBytes)},
		{"too many", []string{"a", "b", "c"}, "ids: 3 ids exceed the limit of 2 per request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := IDs("ids", tc.ids, 2)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, codes.InvalidArgument, status.Code(err))
			assert.Equal(t, tc.want, status.Convert(err).Message())
		})
	}
}

func TestID(t *testing.T) {
	assert.NoError(t, ID("id", "user-1"))
	err := ID("object.refs[2].id", "")
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, "object.refs[2].id: empty id", status.Convert(err).Message())
}
