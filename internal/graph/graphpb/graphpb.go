// Package graphpb converts between graph objects and their wire form.
package graphpb

import (
	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
)

// FromProto converts a wire object; nil stays nil.
func FromProto(p *lookaheadv1.Object) *graph.Object {
	if p == nil {
		return nil
	}
	o := &graph.Object{ID: p.GetId(), Version: p.GetVersion(), Type: p.GetType(), Payload: p.GetPayload()}
	if len(p.GetRefs()) > 0 {
		o.Refs = make([]graph.Ref, len(p.GetRefs()))
		for i, r := range p.GetRefs() {
			f := r.GetField()
			if i > 0 && f == o.Refs[i-1].Field {
				f = o.Refs[i-1].Field // one string for a run of refs of a field, as Decode gives them
			}
			o.Refs[i] = graph.Ref{Field: f, ID: r.GetId()}
		}
	}
	return o
}

// ToProto converts an object to its wire form. The payload is shared, not
// copied: graph objects are immutable.
func ToProto(o *graph.Object) *lookaheadv1.Object {
	if o == nil {
		return nil
	}
	p := &lookaheadv1.Object{Id: o.ID, Version: o.Version, Type: o.Type, Payload: o.Payload}
	if len(o.Refs) > 0 {
		p.Refs = make([]*lookaheadv1.Ref, len(o.Refs))
		for i, r := range o.Refs {
			p.Refs[i] = &lookaheadv1.Ref{Field: r.Field, Id: r.ID}
		}
	}
	return p
}

// ToProtos converts a slice of objects.
func ToProtos(os []*graph.Object) []*lookaheadv1.Object {
	out := make([]*lookaheadv1.Object, len(os))
	for i, o := range os {
		out[i] = ToProto(o)
	}
	return out
}
