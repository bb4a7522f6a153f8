// Package plot draws the benchmark charts as small, dependency-free SVG files.
package plot

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
)

// palette holds distinguishable series colours (Tableau 10).
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

const (
	width, height          = 760, 440
	left, right, top, base = 78, 200, 40, 60 // margins; right holds the legend
)

// Series is one line of a LineChart. NaN values are gaps.
type Series struct {
	Name string
	Y    []float64
	// X gives each point's position on a numeric axis; nil uses the chart's
	// categorical XLabels, one per point.
	X []float64
}

// LineChart plots series against a numeric or categorical x axis.
type LineChart struct {
	Title, XLabel, YLabel string
	XLabels               []string // categorical x axis, when the series have no X
	Series                []Series
	// Ref draws a dashed horizontal reference line at RefY labelled RefLabel
	// when RefLabel is not empty.
	RefY     float64
	RefLabel string
}

// SVG renders the chart.
func (c LineChart) SVG() []byte {
	var xs, ys []float64
	for _, s := range c.Series {
		for i, y := range s.Y {
			if !finite(y) {
				continue
			}
			ys = append(ys, y)
			if s.X != nil {
				xs = append(xs, s.X[i])
			}
		}
	}
	if c.RefLabel != "" {
		ys = append(ys, c.RefY)
	}
	ymin, ymax := niceRange(0, maxOf(ys))
	categorical := len(xs) == 0
	xmin, xmax := 0.0, float64(max(len(c.XLabels)-1, 1))
	if !categorical {
		xmin, xmax = niceRange(minOf(xs), maxOf(xs))
		if minOf(xs) >= 0 {
			xmin = 0
		}
	}
	pw, ph := float64(width-left-right), float64(height-top-base)
	px := func(x float64) float64 {
		if categorical && len(c.XLabels) == 1 {
			return left + pw/2
		}
		return left + (x-xmin)/(xmax-xmin)*pw
	}
	py := func(y float64) float64 { return top + ph - (y-ymin)/(ymax-ymin)*ph }

	var b strings.Builder
	header(&b, c.Title)
	axes(&b, c.XLabel, c.YLabel)
	for _, t := range ticks(ymin, ymax) {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`, left, y, width-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, left-6, y, num(t))
	}
	if categorical {
		for i, l := range c.XLabels {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(float64(i)), height-base+18, esc(l))
		}
	} else {
		for _, t := range ticks(xmin, xmax) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(t), height-base+18, num(t))
		}
	}
	if c.RefLabel != "" {
		y := py(c.RefY)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#555" stroke-dasharray="6 4"/>`, left, y, width-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#555">%s</text>`, left+6, y-5, esc(c.RefLabel))
	}
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		order := make([]int, len(s.Y))
		for j := range order {
			order[j] = j
		}
		if s.X != nil { // draw the line from left to right
			sort.SliceStable(order, func(a, b int) bool { return s.X[order[a]] < s.X[order[b]] })
		}
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, col, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for _, j := range order {
			y := s.Y[j]
			if !finite(y) {
				flush()
				continue
			}
			x := float64(j)
			if s.X != nil {
				x = s.X[j]
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x), py(y)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(x), py(y), col)
		}
		flush()
		legend(&b, i, s.Name, col)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// Bar is one bar of a BarChart: stacked segments, one per BarChart.Parts.
type Bar struct {
	Label string
	Parts []float64
}

// BarChart draws horizontal bars, optionally stacked from several parts and
// on a logarithmic axis (for values spanning decades).
type BarChart struct {
	Title, XLabel string
	Parts         []string // names of the stacked segments
	Bars          []Bar
	Log           bool
}

// SVG renders the chart.
func (c BarChart) SVG() []byte {
	var totals []float64
	for _, bar := range c.Bars {
		totals = append(totals, sum(bar.Parts))
	}
	lo, hi := niceRange(0, maxOf(totals))
	tf := func(v float64) float64 { return v }
	var tks []float64
	if c.Log {
		pos := positive(totals)
		lo = math.Pow(10, math.Floor(math.Log10(minOf(pos))))
		hi = math.Pow(10, math.Ceil(math.Log10(maxOf(pos))))
		if hi <= lo {
			hi = lo * 10
		}
		tf = math.Log10
		for v := lo; v <= hi*1.0001; v *= 10 {
			tks = append(tks, v)
		}
	} else {
		tks = ticks(lo, hi)
	}
	const labelW = 190
	x0 := float64(labelW)
	pw := float64(width - labelW - right)
	px := func(v float64) float64 {
		if c.Log && v < lo {
			v = lo
		}
		return x0 + (tf(v)-tf(lo))/(tf(hi)-tf(lo))*pw
	}
	rows := max(len(c.Bars), 1)
	h := top + base + rows*26
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, width, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`, 10, esc(c.Title))
	for _, t := range tks {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>`, x, top, x, h-base)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, h-base+16, num(t))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x0+pw/2, h-base+36, esc(c.XLabel))
	for i, bar := range c.Bars {
		y := top + i*26 + 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, x0-6, y+9, esc(bar.Label))
		acc := 0.0
		for j, v := range bar.Parts {
			if !finite(v) || v <= 0 {
				continue
			}
			x1, x2 := px(acc), px(acc+v)
			if j == 0 {
				x1 = x0
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="18" fill="%s"/>`, x1, y, math.Max(x2-x1, 0.5), palette[j%len(palette)])
			acc += v
		}
		if t := sum(bar.Parts); finite(t) && t > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" dominant-baseline="middle">%s</text>`, px(t)+4, y+9, num(t))
		}
	}
	for j, p := range c.Parts {
		legend(&b, j, p, palette[j%len(palette)])
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func header(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, width, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`, 10, esc(title))
}

func axes(b *strings.Builder, xl, yl string) {
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, left, height-base, width-right, height-base)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, left, top, left, height-base)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, left+(width-left-right)/2, height-18, esc(xl))
	fmt.Fprintf(b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">%s</text>`, top+(height-top-base)/2, esc(yl))
}

func legend(b *strings.Builder, i int, name, col string) {
	y := top + 10 + i*20
	x := width - right + 14
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/>`, x, y-2, col)
	fmt.Fprintf(b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`, x+20, y, esc(name))
}

// niceRange widens [lo, hi] to round tick values.
func niceRange(lo, hi float64) (float64, float64) {
	if !finite(lo) || !finite(hi) || hi <= lo {
		if finite(lo) && lo > 0 {
			return 0, lo * 1.2
		}
		return 0, 1
	}
	step := niceStep((hi - lo) / 5)
	return math.Floor(lo/step) * step, math.Ceil(hi/step) * step
}

func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func ticks(lo, hi float64) []float64 {
	step := niceStep((hi - lo) / 5)
	var out []float64
	for v := lo; v <= hi+step/1000; v += step {
		out = append(out, v)
	}
	return out
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func esc(s string) string { return html.EscapeString(s) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		if finite(x) {
			t += x
		}
	}
	return t
}

func positive(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if finite(x) && x > 0 {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return []float64{1}
	}
	return out
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		if finite(x) && x < m {
			m = x
		}
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		if finite(x) && x > m {
			m = x
		}
	}
	return m
}
