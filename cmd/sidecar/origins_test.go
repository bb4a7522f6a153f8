package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOriginFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		want []originRoute
		err  string
	}{
		{name: "one origin", sets: []string{"h:1"}, want: []originRoute{{target: "h:1"}}},
		{name: "routes, one per flag", sets: []string{"users/=u:1", "orders/=o:1", "d:1"},
			want: []originRoute{{"users/", "u:1"}, {"orders/", "o:1"}, {"", "d:1"}}},
		{name: "routes in one list", sets: []string{"users/=u:1,d:1"}, want: []originRoute{{"users/", "u:1"}, {"", "d:1"}}},
		{name: "a static list of replicas stays one target", sets: []string{"users/=static:///a:1,b:1,dns:///d:1"},
			want: []originRoute{{"users/", "static:///a:1,b:1"}, {"", "dns:///d:1"}}},
		{name: "empty", sets: []string{""}, err: "-origin is empty"},
		{name: "empty prefix", sets: []string{"=h:1"}, err: "empty prefix"},
		{name: "empty target", sets: []string{"users/="}, err: "empty target"},
		{name: "a route twice", sets: []string{"users/=a:1", "users/=b:1"}, err: `route "users/" given twice`},
		{name: "two defaults", sets: []string{"a:1", "b:1"}, err: `route "default" given twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := originFlag{routes: []originRoute{{target: "default:7071"}}}
			var err error
			for _, v := range tc.sets {
				if err = f.Set(v); err != nil {
					break
				}
			}
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.routes, "the default is replaced")
		})
	}
}
