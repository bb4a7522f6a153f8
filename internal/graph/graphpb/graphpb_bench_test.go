package graphpb_test

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
	"github.com/lookahead-dev/lookahead/internal/graph"
	"github.com/lookahead-dev/lookahead/internal/graph/graphpb"
)

// benchObjects are the objects the benchmarks encode: an inner db4o task
// (five subtask refs, a 10-byte payload, as W1 moves them) and a 1 KiB object
// (as W3 and W4 cache them).
func benchObjects(b *testing.B) map[string]*graph.Object {
	b.Helper()
	out := map[string]*graph.Object{}
	for name, payload := range map[string]int{"task": 10, "1KiB": 1024} {
		var o *graph.Object
		g := graph.TaskTrees{Roots: 1, Fanout: 5, Levels: 3, PayloadBytes: payload, Seed: 1}
		if err := g.Generate(func(x *graph.Object) error {
			if x.ID == "task-0.1" { // an inner task: it has refs
				o = x
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		out[name] = o
	}
	return out
}

// BenchmarkMarshal is what an origin or the sidecar pays to put an object on
// the wire: conversion to the wire form and proto encoding.
func BenchmarkMarshal(b *testing.B) {
	for name, o := range benchObjects(b) {
		b.Run(name, func(b *testing.B) {
			n := proto.Size(graphpb.ToProto(o))
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := proto.Marshal(graphpb.ToProto(o)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "wire-bytes/object")
			b.ReportMetric(float64(o.Size()), "cache-bytes/object")
		})
	}
}

// BenchmarkUnmarshal is what the sidecar pays for each object an origin
// sends: proto decoding and conversion to a graph object.
func BenchmarkUnmarshal(b *testing.B) {
	benchDecoding(b, func(wire []byte) error {
		var p lookaheadv1.Object
		if err := proto.Unmarshal(wire, &p); err != nil {
			return err
		}
		if graphpb.FromProto(&p) == nil {
			return errors.New("nil object")
		}
		return nil
	})
}

// BenchmarkDecode is what the sidecar pays now for each object of an Expand
// stream: a copy of its bytes, kept as its Wire, and Decode. Compare with
// BenchmarkUnmarshal.
func BenchmarkDecode(b *testing.B) {
	benchDecoding(b, func(wire []byte) error {
		_, err := graphpb.Decode(bytes.Clone(wire))
		return err
	})
}

// benchDecoding times decode on each bench object's wire form.
func benchDecoding(b *testing.B, decode func(wire []byte) error) {
	for name, o := range benchObjects(b) {
		b.Run(name, func(b *testing.B) {
			wire, err := proto.Marshal(graphpb.ToProto(o))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decode(wire); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(wire)), "wire-bytes/object")
		})
	}
}
