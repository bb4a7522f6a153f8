package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/flagconf/flagconftest"
)

// badValues lists, for every setting of the sidecar, values it must refuse
// and a phrase of the message each gets. A setting with no bad value says
// why. TestEverySettingIsChecked fails when a flag is missing here.
var badValues = map[string][]flagconftest.Bad{
	"listen":                   {{"7070", "-listen \"7070\": want host:port"}},
	"unix-socket":              nil, // any path; a bad one fails at listen
	"unix-socket-mode":         {{"0778", "want octal permission bits"}, {"rw", "want octal permission bits"}},
	"metrics-listen":           {{"localhost", "-metrics-listen \"localhost\": want host:port"}},
	"pprof":                    {{"maybe", `"maybe"`}},
	"gc-percent":               {{"0", "-gc-percent 0: must be at least 1"}, {"-1", "must be at least 1"}, {"lax", `"lax"`}},
	"origin":                   {{"", "-origin is empty"}},
	"addr-file":                nil, // any path
	"cache-bytes":              {{"0", "-cache-bytes 0: must be at least 1"}, {"-1MiB", "want a non-negative whole number"}, {"lots", "want a non-negative whole number"}},
	"prefetch-bytes":           {{"0", "-prefetch-bytes 0: must be at least 1"}, {"1XB", "want a non-negative whole number"}},
	"negative-ttl":             {{"soon", `"soon"`}}, // negative disables
	"ttl":                      {{"-1s", "TTL must not be negative"}},
	"stale-while-revalidate":   {{"-1s", "-stale-while-revalidate -1s: must not be negative"}},
	"stale-if-error":           {{"-1s", "-stale-if-error -1s: must not be negative"}},
	"watch":                    {{"perhaps", `"perhaps"`}},
	"watch-grace":              {{"0", "-watch-grace 0s: must be positive"}, {"-1s", "-watch-grace -1s: must be positive"}},
	"prefetch-mode":            {{"bogus", `prefetch mode "bogus": want static, adaptive or off`}},
	"prefetch-depth":           {{"-1", "prefetch depth -1: must not be negative"}, {"17", "-prefetch-depth 17: must not exceed -max-depth 16"}},
	"prefetch-max-objects":     {{"-1", "prefetch max objects -1: must not be negative"}},
	"prefetch-fields":          {{"a,,b", `-prefetch-fields "a,,b": field 2 is empty`}},
	"prefetch-workers":         {{"0", "-prefetch-workers 0: must be at least 1"}, {"-1", "prefetch workers -1: must be at least 1"}},
	"batch-size":               {{"0", "-batch-size 0: must be at least 1"}, {"-1", "batch size -1: must be at least 1"}},
	"demand-batches":           {{"0", "-demand-batches 0: must be at least 1"}, {"-1", "demand batches -1: must be at least 1"}},
	"prefetch-queue":           {{"0", "-prefetch-queue 0: must be at least 1"}, {"-1", "prefetch queue size -1: must be at least 1"}},
	"prefetch-queue-bytes":     {{"0", "-prefetch-queue-bytes 0: must be at least 1"}, {"-1MiB", "want a non-negative whole number"}},
	"no-expand":                {{"yes please", `"yes please"`}},
	"max-ids":                  {{"0", "-max-ids 0: must be at least 1"}, {"-1", "max ids -1: must be at least 1"}},
	"max-depth":                {{"0", "-max-depth 0: must be at least 1"}, {"-1", "max depth -1: must be at least 1"}, {"2", "-prefetch-depth 3: must not exceed -max-depth 2"}},
	"max-walks":                {{"0", "-max-walks 0: must be at least 1"}, {"-1", "max walks -1: must be at least 1"}},
	"max-origin-requests":      {{"0", "-max-origin-requests 0: must be at least 1"}, {"-1", "max origin requests -1: must be at least 1"}},
	"max-origin-waiting":       {{"0", "-max-origin-waiting 0: must be at least 1"}, {"-1", "max origin waiting -1: must be at least 1"}},
	"stream-memory-bytes":      {{"0", "-stream-memory-bytes 0: must be at least 1"}, {"lots", `size "lots"`}},
	"max-objects":              {{"0", "-max-objects 0: must be at least 1"}, {"-1", "max objects -1: must be at least 1"}},
	"health-interval":          {{"0", "-health-interval 0s: must be positive"}, {"-1s", "-health-interval -1s: must be positive"}},
	"otlp-endpoint":            {{"collector:4317", `otlp endpoint "collector:4317": want http://host:port`}, {"ftp://c:21", "want http://host:port"}},
	"readiness-failure-ratio":  {{"0", "-readiness-failure-ratio 0: must be above 0 and at most 1"}, {"1.5", "must be above 0 and at most 1"}, {"half", `"half"`}},
	"drain-timeout":            {{"-1s", "-drain-timeout -1s: must not be negative"}},
	"log-level":                {{"loud", `-log-level "loud": want debug, info, warn or error`}},
	"config":                   {{"/nonexistent/sidecar.yaml", "no such file"}},
	"origin-retries":           {{"-1", "-origin-retries -1: must not be negative"}},
	"origin-breaker-failures":  {{"-1", "-origin-breaker-failures -1: must not be negative"}},
	"origin-timeout":           {{"-1s", "-origin-timeout -1s: must not be negative"}},
	"origin-breaker-cooldown":  {{"0", "-origin-breaker-cooldown 0s: must be positive"}},
	"max-object-bytes":         {{"0", "-max-object-bytes 0: must be positive"}},
	"keepalive-time":           {{"500ms", "-keepalive-time 500ms: must be at least 1s"}},
	"origin-keepalive-time":    {{"5s", "-origin-keepalive-time 5s: must be at least 10s (gRPC pings no more often), or 0 for no pings"}},
	"origin-keepalive-timeout": {{"0s", "-origin-keepalive-timeout 0s: must be at least 1s"}},
	"keepalive-timeout":        {{"0", "-keepalive-timeout 0s: must be at least 1s"}},
	"max-concurrent-streams":   {{"-1", "-max-concurrent-streams -1: must be between 0 (no limit) and 4294967295"}, {"4294967296", "must be between 0 (no limit) and 4294967295"}, {"many", `"many"`}},
	"max-connections":          {{"-1", "-max-connections -1: must not be negative (0 = no limit)"}, {"many", `"many"`}},
	"max-message-bytes":        {{"0", "-max-message-bytes 0: must be between 1 and 2GiB-1"}, {"3GiB", "must be between 1 and 2GiB-1"}, {"1MiB", "must exceed -max-object-bytes"}},
	"tls-cert":                 {{"/nonexistent/cert.pem", "certificate and key must be given together"}},
	"tls-key":                  {{"/nonexistent/key.pem", "certificate and key must be given together"}},
	"tls-client-ca":            {{"/nonexistent/ca.pem", "certificate and key must be given together"}},
	"origin-tls-ca":            {{"/nonexistent/ca.pem", "-origin-tls-ca, -origin-tls-cert, -origin-tls-key"}},
	"origin-tls-cert":          {{"/nonexistent/cert.pem", "client certificate and key must be given together"}},
	"origin-tls-key":           {{"/nonexistent/key.pem", "client certificate and key must be given together"}},
	"origin-tls-server-name":   nil, // any name; alone it means TLS with the system's roots
}

var sidecar = flagconftest.Command{
	Name: "sidecar", EnvPrefix: "LOOKAHEAD_SIDECAR", CLI: cli, Bad: badValues,
	Parse: func(args []string) ([]string, error) {
		o, err := parseFlags(args)
		if err != nil {
			return nil, err
		}
		return o.cmd.Settings, nil
	},
	Alone: map[string][]string{"listen": {"--unix-socket", "/tmp/x.sock"}, "origin": {"--unix-socket", "/tmp/x.sock"}},
}

func TestEverySettingIsChecked(t *testing.T) { sidecar.EverySettingIsChecked(t) }
func TestBadSettingsAreRefused(t *testing.T) { sidecar.BadSettingsAreRefused(t) }
func TestVersion(t *testing.T)               { sidecar.Version(t) }

func TestEveryProblemIsReported(t *testing.T) {
	_, err := parseFlags([]string{"--batch-size", "0", "--prefetch-mode", "bogus", "--health-interval", "0"})
	require.Error(t, err)
	for _, want := range []string{"-batch-size 0", `prefetch mode "bogus"`, "-health-interval 0s"} {
		assert.ErrorContains(t, err, want)
	}
}

func TestCheckConfigPrintsValidSettings(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, cli([]string{"--check-config", "--batch-size", "64"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "batch-size=64\n")
}
