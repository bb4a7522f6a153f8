package bench

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// table renders a markdown table.
func table(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// fmtDur prints a duration with three significant digits.
func fmtDur(d time.Duration) string {
	s := d.Seconds()
	switch {
	case d <= 0:
		return "0"
	case s >= 1:
		return sig(s) + " s"
	case s >= 1e-3:
		return sig(s*1e3) + " ms"
	}
	return sig(s*1e6) + " µs"
}

// fmtMS prints a duration in milliseconds.
func fmtMS(d time.Duration) string { return sig(d.Seconds()*1e3) + " ms" }

func sig(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtBytes(b float64) string {
	switch {
	case math.IsNaN(b):
		return "–"
	case b >= 1<<30:
		return sig(b/(1<<30)) + " GiB"
	case b >= 1<<20:
		return sig(b/(1<<20)) + " MiB"
	case b >= 1<<10:
		return sig(b/(1<<10)) + " KiB"
	}
	return fmt.Sprintf("%.0f B", b)
}

func fmtCount(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if math.Abs(v-math.Round(v)) < 0.05 || math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return sig(v) + "×"
}

func fmtPct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", v*100)
}
