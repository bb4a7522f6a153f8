package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteSize is a flag.Value for sizes such as 256MiB, 1GiB or 4096.
type byteSize int64

var units = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("size %q: want a non-negative whole number with an optional unit (KiB, MiB, GiB)", s)
	}
	if n > math.MaxInt64/mult {
		return fmt.Errorf("size %q: too large", s)
	}
	*b = byteSize(n * mult)
	return nil
}

func (b *byteSize) String() string {
	if b == nil {
		return "0"
	}
	n := int64(*b)
	for _, u := range units[:3] {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
