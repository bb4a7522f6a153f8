package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lookahead-dev/lookahead/internal/flagconf/flagconftest"
)

// badValues lists, for every setting of the origin, values it must refuse
// and a phrase of the message each gets. A setting with no bad value says
// why. TestEverySettingIsChecked fails when a flag is missing here.
var badValues = map[string][]flagconftest.Bad{
	"listen":                 {{"", "-listen is empty"}, {"7071", `-listen "7071": want host:port`}},
	"metrics-listen":         {{"localhost", `-metrics-listen "localhost": want host:port`}},
	"data":                   {{"", "-data is empty"}},
	"addr-file":              nil, // any path
	"store":                  {{"mysql://db", "-store: want empty (bbolt) or a postgres:// URL"}, {"postgres://db", "-store postgres://… needs -mapping"}},
	"mapping":                {{"/nonexistent/mapping.yaml", "-mapping without -store postgres://…"}},
	"seed":                   {{"everything", `-seed "everything": want none, tasks, random or social`}},
	"social-users":           {{"0", "-social-users 0: want 1 to"}},
	"social-max-friends":     {{"0", "-social-max-friends 0: want at least 1"}},
	"social-dangling":        {{"-0.5", "-social-dangling -0.5: want 0 to 1"}},
	"reseed":                 {{"twice", `"twice"`}},
	"task-roots":             {{"0", "-task-roots 0: want at least 1"}, {"2000000000", "more than 1000000000 objects"}},
	"task-fanout":            {{"0", "-task-fanout 0: want at least 1"}},
	"task-levels":            {{"-1", "-task-levels -1: want at least 1"}},
	"payload-bytes":          {{"-1", "-payload-bytes -1 is negative"}},
	"random-nodes":           {{"0", "-random-nodes 0: want 1 to 1000000000"}},
	"random-refs":            {{"-1", "-random-refs -1 is negative"}},
	"random-dangling":        {{"1.5", "-random-dangling 1.5: want 0 to 1"}, {"NaN", "-random-dangling NaN: want 0 to 1"}},
	"dataset-seed":           {{"-1", `"-1"`}},
	"load":                   {{"/nonexistent/objects.ndjson", "-load: stat /nonexistent/objects.ndjson"}},
	"latency":                {{"-1ms", "latency -1ms is negative"}},
	"max-ids":                {{"0", "-max-ids 0: must be at least 1"}, {"-1", "max ids -1 is negative"}},
	"max-depth":              {{"0", "-max-depth 0: must be at least 1"}, {"-1", "max depth -1 is negative"}},
	"max-objects":            {{"0", "-max-objects 0: must be at least 1"}, {"-1", "max objects -1 is negative"}},
	"shed-speculative-above": {{"-1", "shed speculative above -1 is negative"}},
	"tls-cert":               {{"/nonexistent/cert.pem", "certificate and key must be given together"}},
	"tls-key":                {{"/nonexistent/key.pem", "certificate and key must be given together"}},
	"tls-client-ca":          {{"/nonexistent/ca.pem", "certificate and key must be given together"}},
	"log-level":              {{"loud", `-log-level "loud": want debug, info, warn or error`}},
	"otlp-endpoint":          {{"collector:4317", `otlp endpoint "collector:4317": want http://host:port`}, {"ftp://c:21", "want http://host:port"}},
	"drain-timeout":          {{"-1s", "-drain-timeout -1s: must not be negative"}},
	"keepalive-time":         {{"500ms", "-keepalive-time 500ms: must be at least 1s"}},
	"keepalive-timeout":      {{"0s", "-keepalive-timeout 0s: must be at least 1s"}},
	"config":                 {{"/nonexistent/origin.yaml", "no such file"}},
}

var origin = flagconftest.Command{
	Name: "origin", EnvPrefix: "LOOKAHEAD_ORIGIN", CLI: cli, Bad: badValues,
	Parse: func(args []string) ([]string, error) {
		o, err := parseFlags(args)
		if err != nil {
			return nil, err
		}
		return o.cmd.Settings, nil
	},
}

func TestEverySettingIsChecked(t *testing.T) { origin.EverySettingIsChecked(t) }
func TestBadSettingsAreRefused(t *testing.T) { origin.BadSettingsAreRefused(t) }
func TestVersion(t *testing.T)               { origin.Version(t) }

func TestCheckConfigPrintsValidSettings(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, cli([]string{"--check-config", "--seed", "tasks", "--data", t.TempDir()}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "seed=tasks\n")
}
