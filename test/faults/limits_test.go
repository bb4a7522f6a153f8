package faults

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lookaheadv1 "github.com/lookahead-dev/lookahead/api/proto/lookahead/v1"
)

var _ = Describe("message and object limits", func() {
	It("answers RESOURCE_EXHAUSTED from gRPC for a too large message, and refuses and counts an oversized object", func() {
		o := startOrigin()
		s := startSidecar(o.GRPC, "--prefetch-mode", "off", "--max-object-bytes", "48KiB", "--max-message-bytes", "64KiB")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		put := func(id string, kib int) error {
			_, err := s.c.Service().Put(ctx, &lookaheadv1.PutRequest{Object: &lookaheadv1.Object{
				Id: id, Type: "Blob", Payload: []byte(strings.Repeat("x", kib<<10)),
			}})
			return err
		}

		err := put("huge", 100)
		Expect(code(err)).To(Equal(codes.ResourceExhausted), "a request over --max-message-bytes: %v", err)
		Expect(err.Error()).To(ContainSubstring("larger than max"))

		Expect(put("a", 40)).To(Succeed())
		Expect(put("b", 40)).To(Succeed())
		err = put("c", 50)
		Expect(code(err)).To(Equal(codes.InvalidArgument), "an object the sidecar could not read back is not written: %v", err)
		Expect(err.Error()).To(ContainSubstring(`object "c": 51301 bytes exceed the limit of 49152`))
		Expect(status.Convert(err).Message()).NotTo(ContainSubstring("rpc error"), "one status, not a status wrapped in another")

		// Another writer puts it straight into the origin, which has no such
		// limit: --max-object-bytes bounds what the sidecar accepts from it.
		oc, err := grpc.NewClient(o.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		Expect(err).NotTo(HaveOccurred())
		defer oc.Close()
		origin := lookaheadv1.NewOriginServiceClient(oc)
		before, err := origin.BatchGet(ctx, &lookaheadv1.OriginServiceBatchGetRequest{Ids: []string{"c"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(before.GetMissingIds()).To(ConsistOf("c"), "the refused Put wrote nothing")
		Expect(s.metric("lookahead_origin_round_trips_total", "rpc", "Put")).To(Equal(2.0), "the refused Put never reached the origin")
		_, err = origin.Put(ctx, &lookaheadv1.OriginServicePutRequest{Object: &lookaheadv1.Object{
			Id: "c", Type: "Blob", Payload: []byte(strings.Repeat("x", 50<<10)),
		}})
		Expect(err).NotTo(HaveOccurred())

		_, _, err = s.c.BatchGet(ctx, []string{"a", "b"}, nil)
		Expect(code(err)).To(Equal(codes.ResourceExhausted), "the origin's 80 KiB reply is over --max-message-bytes: %v", err)
		got, _, err := s.c.Get(ctx, "a", nil)
		Expect(err).NotTo(HaveOccurred(), "one object at a time fits")
		Expect(got.GetPayload()).To(HaveLen(40 << 10))

		for i := 0; i < 2; i++ {
			_, _, err = s.c.Get(ctx, "c", nil)
			Expect(code(err)).To(Equal(codes.Internal), "%v", err)
			Expect(err.Error()).To(ContainSubstring(`origin reply malformed: object "c"`))
		}
		Expect(s.metric("lookahead_origin_malformed_total", "problem", "oversized")).To(Equal(2.0), "refused each time: never cached")
		record("100 KiB Put over --max-message-bytes 64KiB: %s; 50 KiB Put over --max-object-bytes 48KiB: INVALID_ARGUMENT, not written; 80 KiB origin reply: RESOURCE_EXHAUSTED; 50 KiB object over --max-object-bytes 48KiB: INTERNAL \"origin reply malformed\", counted as oversized, not cached",
			codes.ResourceExhausted)
	})
})
