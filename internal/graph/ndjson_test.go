package graph_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/graph"
)

// ndjsonCollect decodes in and returns what was emitted.
func ndjsonCollect(t testing.TB, in string) ([]*graph.Object, int, error) {
	t.Helper()
	var got []*graph.Object
	n, err := graph.DecodeNDJSON(strings.NewReader(in), func(o *graph.Object) error {
		got = append(got, o)
		return nil
	})
	return got, n, err
}

func TestDecodeNDJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []*graph.Object
	}{
		{name: "empty input", in: ""},
		{
			name: "full object",
			in:   `{"id":"a","version":3,"type":"Task","refs":[{"field":"subtasks","id":"b"},{"field":"owner","id":"a"}],"payload":"aGVsbG8="}`,
			want: []*graph.Object{{
				ID: "a", Version: 3, Type: "Task",
				Refs:    []graph.Ref{{Field: "subtasks", ID: "b"}, {Field: "owner", ID: "a"}},
				Payload: []byte("hello"),
			}},
		},
		{name: "id only", in: `{"id":"a"}`, want: []*graph.Object{{ID: "a"}}},
		{name: "payload text", in: `{"id":"a","payload_text":"héllo\n"}`, want: []*graph.Object{{ID: "a", Payload: []byte("héllo\n")}}},
		{name: "empty refs and payload are nil", in: `{"id":"a","refs":[],"payload":""}`, want: []*graph.Object{{ID: "a"}}},
		{name: "nulls", in: `{"id":"a","refs":null,"payload":null,"payload_text":null}`, want: []*graph.Object{{ID: "a"}}},
		{
			name: "blank lines, CRLF and surrounding space",
			in:   "\n{\"id\":\"a\"}\r\n\r\n   \n\t{\"id\":\"b\"}  \n\n",
			want: []*graph.Object{{ID: "a"}, {ID: "b"}},
		},
		{name: "no final newline", in: "{\"id\":\"a\"}\n{\"id\":\"b\"}", want: []*graph.Object{{ID: "a"}, {ID: "b"}}},
		{name: "unicode escapes", in: `{"id":"\u00e9t\u00e9"}`, want: []*graph.Object{{ID: "été"}}},
		{name: "id of 1024 bytes", in: `{"id":"` + strings.Repeat("x", 1024) + `"}`, want: []*graph.Object{{ID: strings.Repeat("x", 1024)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := ndjsonCollect(t, tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, len(tc.want), n)
		})
	}
}

func TestDecodeNDJSONErrors(t *testing.T) {
	good := `{"id":"ok"}` + "\n"
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantN    int
		wantIs   error
		wantMsg  string
	}{
		{name: "syntax", in: good + `{"id":"a"` + "\n", wantLine: 2, wantN: 1, wantMsg: "unexpected EOF"},
		{name: "not an object", in: `["a"]`, wantLine: 1, wantMsg: "cannot unmarshal array"},
		{name: "missing id", in: good + good + `{"type":"T"}`, wantLine: 3, wantN: 2, wantIs: graph.ErrEmptyID, wantMsg: "id: graph: empty id"},
		{name: "empty id", in: `{"id":""}`, wantLine: 1, wantIs: graph.ErrEmptyID},
		{name: "id too long", in: `{"id":"` + strings.Repeat("x", 1025) + `"}`, wantLine: 1, wantIs: graph.ErrIDTooLong},
		{name: "empty ref id", in: `{"id":"a","refs":[{"field":"f","id":"b"},{"field":"g","id":""}]}`, wantLine: 1, wantIs: graph.ErrEmptyID, wantMsg: "ref 1 (g)"},
		{name: "unknown key", in: `{"id":"a","paylod":"eA=="}`, wantLine: 1, wantMsg: `unknown field "paylod"`},
		{name: "bad base64", in: `{"id":"a","payload":"not base64!"}`, wantLine: 1, wantMsg: "base64"},
		{name: "both payloads", in: `{"id":"a","payload":"eA==","payload_text":"x"}`, wantLine: 1, wantMsg: `both "payload" and "payload_text"`},
		{name: "negative version", in: `{"id":"a","version":-1}`, wantLine: 1, wantMsg: "version"},
		{name: "string version", in: `{"id":"a","version":"1"}`, wantLine: 1, wantMsg: "version"},
		{name: "two values on a line", in: `{"id":"a"} {"id":"b"}`, wantLine: 1, wantMsg: "data after the JSON object"},
		{name: "trailing brace", in: `{"id":"a"}}`, wantLine: 1, wantMsg: "data after the JSON object"},
		{name: "line too long", in: good + `{"id":"a","payload_text":"` + strings.Repeat("x", graph.MaxNDJSONLine) + `"}`, wantLine: 2, wantN: 1, wantMsg: "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := ndjsonCollect(t, tc.in)
			require.Error(t, err)
			var lineErr *graph.NDJSONError
			require.ErrorAs(t, err, &lineErr)
			assert.Equal(t, tc.wantLine, lineErr.Line)
			assert.Contains(t, err.Error(), fmt.Sprintf("ndjson line %d: ", tc.wantLine))
			assert.Equal(t, tc.wantN, n)
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			}
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestDecodeNDJSONLongLine(t *testing.T) {
	payload := bytes.Repeat([]byte{0xab}, 3<<20) // several MiB once in base64
	var buf bytes.Buffer
	require.NoError(t, graph.EncodeNDJSON(&buf, &graph.Object{ID: "big", Payload: payload}))
	require.Greater(t, buf.Len(), 4<<20)
	got, n, err := ndjsonCollect(t, buf.String())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.Len(t, got, 1)
	assert.Equal(t, payload, got[0].Payload)
}

func TestDecodeNDJSONEmitError(t *testing.T) {
	stop := errors.New("stop")
	in := "{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n"
	calls := 0
	n, err := graph.DecodeNDJSON(strings.NewReader(in), func(o *graph.Object) error {
		calls++
		if o.ID == "b" {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	var lineErr *graph.NDJSONError
	require.ErrorAs(t, err, &lineErr)
	assert.Equal(t, 3, lineErr.Line)
	assert.Equal(t, 1, n, "n counts only the objects emit accepted")
	assert.Equal(t, 2, calls, "decoding stops at the emit error")
}

func TestEncodeNDJSONRoundTrip(t *testing.T) {
	var want []*graph.Object
	var buf bytes.Buffer
	gen := graph.RandomGraph{N: 50, RefsPerNode: 3, DanglingRate: 0.2, PayloadBytes: 7, Seed: 3}
	require.NoError(t, gen.Generate(func(o *graph.Object) error {
		want = append(want, o)
		return graph.EncodeNDJSON(&buf, o)
	}))
	extra := &graph.Object{ID: "bin", Version: 9, Type: "Blob", Payload: []byte{0, 0xff, '\n', '"'}}
	want = append(want, extra)
	require.NoError(t, graph.EncodeNDJSON(&buf, extra))

	got, n, err := ndjsonCollect(t, buf.String())
	require.NoError(t, err)
	assert.Equal(t, len(want), n)
	assert.Equal(t, want, got)

	assert.ErrorIs(t, graph.EncodeNDJSON(&buf, nil), graph.ErrNilObject)
}

// FuzzDecodeNDJSON checks that decoding never panics, that everything it
// emits is a valid object, and that encoding what it emitted and decoding
// again gives the same objects.
func FuzzDecodeNDJSON(f *testing.F) {
	f.Add([]byte(`{"id":"a","version":1,"type":"Task","refs":[{"field":"subtasks","id":"b"}],"payload":"aGVsbG8="}`))
	f.Add([]byte("{\"id\":\"a\",\"payload_text\":\"x\"}\r\n\n{\"id\":\"b\"}"))
	f.Add([]byte(`{"id":""}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var got []*graph.Object
		n, err := graph.DecodeNDJSON(bytes.NewReader(in), func(o *graph.Object) error {
			got = append(got, o)
			return nil
		})
		require.Equal(t, len(got), n)
		if err != nil {
			var lineErr *graph.NDJSONError
			require.ErrorAs(t, err, &lineErr)
			require.Positive(t, lineErr.Line)
		}
		var buf bytes.Buffer
		for _, o := range got {
			require.NoError(t, o.Validate())
			require.NoError(t, graph.EncodeNDJSON(&buf, o))
		}
		again, _, err := ndjsonCollect(t, buf.String())
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}

func ExampleDecodeNDJSON() {
	in := `{"id":"a","type":"Task","refs":[{"field":"subtasks","id":"b"}],"payload_text":"first"}
{"id":"b","version":2,"type":"Task","payload":"c2Vjb25k"}
`
	n, err := graph.DecodeNDJSON(strings.NewReader(in), func(o *graph.Object) error {
		fmt.Printf("%s v%d %q refs=%v\n", o.ID, o.Version, o.Payload, o.Refs)
		return nil
	})
	fmt.Println(n, err)

	_, err = graph.DecodeNDJSON(strings.NewReader("{\"id\":\"a\"}\n{\"id\":\"\"}\n"), func(*graph.Object) error { return nil })
	fmt.Println(err)
	_ = graph.EncodeNDJSON(os.Stdout, &graph.Object{ID: "c", Payload: []byte("third")})
	// Output:
	// a v0 "first" refs=[{subtasks b}]
	// b v2 "second" refs=[]
	// 2 <nil>
	// ndjson line 2: id: graph: empty id
	// {"id":"c","payload":"dGhpcmQ="}
}
