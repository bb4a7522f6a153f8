package originserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

func TestDescribe(t *testing.T) {
	h := newHarness(t, Config{MaxIDs: 7, MaxDepth: 3})
	resp, err := h.client.Describe(testCtx(t), &lookaheadv1.DescribeRequest{})
	require.NoError(t, err)
	assert.Equal(t, h.st.Identity(), resp.GetDatasetId())
	assert.NotEmpty(t, resp.GetDatasetId())
	assert.True(t, resp.GetExpand())
	assert.True(t, resp.GetWatch())
	assert.True(t, resp.GetWrites())
	assert.Equal(t, uint32(7), resp.GetLimits().GetMaxIds())
	assert.Equal(t, uint32(3), resp.GetLimits().GetMaxDepth())
	assert.Equal(t, uint32(1_000_000), resp.GetLimits().GetMaxObjects(), "the default")

	again, err := h.client.Describe(testCtx(t), &lookaheadv1.DescribeRequest{})
	require.NoError(t, err)
	assert.Equal(t, resp.GetDatasetId(), again.GetDatasetId(), "stable")
}
