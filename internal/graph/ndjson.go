package graph

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// MaxNDJSONLine is the longest NDJSON line DecodeNDJSON accepts, in bytes.
const MaxNDJSONLine = 16 << 20

// ndjsonObject is one NDJSON line.
type ndjsonObject struct {
	ID          string      `json:"id"`
	Version     uint64      `json:"version,omitempty"`
	Type        string      `json:"type,omitempty"`
	Refs        []ndjsonRef `json:"refs,omitempty"`
	Payload     []byte      `json:"payload,omitempty"`
	PayloadText *string     `json:"payload_text,omitempty"`
}

type ndjsonRef struct {
	Field string `json:"field"`
	ID    string `json:"id"`
}

// NDJSONError names the line of an NDJSON stream that could not be decoded.
type NDJSONError struct {
	Line int // 1-based
	Err  error
}

func (e *NDJSONError) Error() string {
	return "ndjson line " + strconv.Itoa(e.Line) + ": " + e.Err.Error()
}

func (e *NDJSONError) Unwrap() error { return e.Err }

// DecodeNDJSON reads objects in NDJSON, the dataset format for hand-written
// and exported graphs, from r and emits each, in file order. NDJSON is one
// JSON object per line, lines ending in "\n" or "\r\n", blank lines skipped:
//
//	{"id":"a","version":1,"type":"Task","refs":[{"field":"subtasks","id":"b"}],"payload":"aGVsbG8="}
//	{"id":"b","type":"Task","payload_text":"hello"}
//
// id is required and must pass ValidateID, as must every ref's id. version
// (default 0, i.e. unknown), type, refs and the payload are optional. The
// payload is either "payload", standard base64 with padding, or
// "payload_text", the payload as a UTF-8 string; not both. Unknown keys are
// rejected so that a misspelt key is not silently dropped. A line may be up to
// MaxNDJSONLine bytes long.
//
// DecodeNDJSON stops at the first bad line with an *NDJSONError naming it, and
// at the first error emit returns, wrapped in an *NDJSONError for the line
// too. n counts the objects emit accepted.
func DecodeNDJSON(r io.Reader, emit EmitFunc) (n int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxNDJSONLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		o, err := decodeNDJSONLine(b)
		if err != nil {
			return n, &NDJSONError{Line: line, Err: err}
		}
		if err := emit(o); err != nil {
			return n, &NDJSONError{Line: line, Err: err}
		}
		n++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("longer than %d bytes", MaxNDJSONLine)
		}
		return n, &NDJSONError{Line: line + 1, Err: err}
	}
	return n, nil
}

func decodeNDJSONLine(b []byte) (*Object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var in ndjsonObject
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	if dec.InputOffset() != int64(len(b)) {
		return nil, errors.New("data after the JSON object")
	}
	if err := ValidateID(in.ID); err != nil {
		return nil, fmt.Errorf("id: %w", err)
	}
	o := &Object{ID: in.ID, Version: in.Version, Type: in.Type}
	switch {
	case in.PayloadText != nil && in.Payload != nil:
		return nil, errors.New(`both "payload" and "payload_text"`)
	case in.PayloadText != nil:
		o.Payload = []byte(*in.PayloadText)
	default:
		o.Payload = in.Payload
	}
	if len(o.Payload) == 0 {
		o.Payload = nil
	}
	if len(in.Refs) > 0 {
		o.Refs = make([]Ref, len(in.Refs))
		for i, r := range in.Refs {
			if err := ValidateID(r.ID); err != nil {
				return nil, &RefError{Index: i, Field: r.Field, Err: err}
			}
			o.Refs[i] = Ref{Field: r.Field, ID: r.ID}
		}
	}
	return o, nil
}

// EncodeNDJSON writes o as one NDJSON line, its payload in base64. What it
// writes, DecodeNDJSON reads back as an equal object, provided o's strings
// are valid UTF-8 (JSON replaces invalid bytes).
func EncodeNDJSON(w io.Writer, o *Object) error {
	if o == nil {
		return ErrNilObject
	}
	out := ndjsonObject{ID: o.ID, Version: o.Version, Type: o.Type, Payload: o.Payload}
	if len(o.Refs) > 0 {
		out.Refs = make([]ndjsonRef, len(o.Refs))
		for i, r := range o.Refs {
			out.Refs[i] = ndjsonRef{Field: r.Field, ID: r.ID}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encoding %q: %w", o.ID, err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
