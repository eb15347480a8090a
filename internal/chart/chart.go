// Package chart draws line and point charts as self-contained SVG and
// writes their data as CSV: the one renderer of the simulator's figures and
// the demo's freshness chart. Written by hand because the charts are
// simple and a plotting library would bring fonts and image codecs into
// every build for a few polylines.
package chart

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Series is one line (or set of points) of a chart.
type Series struct {
	Name   string
	X, Y   []float64
	Points bool // draw marks only, no line
	Dashed bool
	Color  string // CSS colour; empty: the next of the palette
}

// Chart is one figure: written as CSV (one column per series) and SVG.
type Chart struct {
	Name   string // file name without extension, e.g. "figure-6.1"
	Title  string
	XLabel string
	YLabel string
	LogX   bool // log2 x axis (numbers of crawlers)
	YMax   float64
	Series []Series
	Note   string // a line of text under the legend
}

// WriteCSV writes x and one column per series; a series without a value at
// some x leaves its cell empty.
func (c *Chart) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{c.XLabel}
	var xs []float64
	for _, s := range c.Series {
		head = append(head, s.Name)
		xs = append(xs, s.X...)
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, x := range xs {
		row := []string{fmtNum(x)}
		for _, s := range c.Series {
			cell := ""
			for i := range s.X {
				if s.X[i] == x {
					if cell != "" {
						cell += ";"
					}
					cell += fmtNum(s.Y[i])
				}
			}
			row = append(row, cell)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

var palette = []string{"#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#4b5563", "#db2777"}

// SVG draws the chart: a self-contained SVG with axes, grid and legend.
func (c *Chart) SVG() string {
	const W, H, left, right, top, bottom = 820.0, 440.0, 64.0, 210.0, 44.0, 52.0
	pw, ph := W-left-right, H-top-bottom
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymax := c.YMax
	for _, s := range c.Series {
		for i, x := range s.X {
			if c.LogX {
				x = math.Log2(x)
			}
			xmin, xmax = min(xmin, x), max(xmax, x)
			if c.YMax == 0 && !math.IsNaN(s.Y[i]) {
				ymax = max(ymax, s.Y[i])
			}
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	ymin := 0.0
	for _, s := range c.Series {
		for _, y := range s.Y {
			if y < ymin {
				ymin = y
			}
		}
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	sx := func(x float64) float64 {
		if c.LogX {
			x = math.Log2(x)
		}
		return left + pw*(x-xmin)/(xmax-xmin)
	}
	sy := func(y float64) float64 { return top + ph*(1-(y-ymin)/(ymax-ymin)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="24" font-size="15">%s</text>`+"\n", left, esc(c.Title))
	for i := 0; i <= 5; i++ {
		v := ymin + (ymax-ymin)*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e7eb"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, sy(v), left+pw, sy(v), left-6, sy(v)+4, fmtTick(v))
	}
	if c.LogX {
		for e := math.Ceil(xmin); e <= xmax; e++ {
			x := left + pw*(e-xmin)/(xmax-xmin)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+ph+18, fmtNum(math.Exp2(e)))
		}
	} else {
		for i := 0; i <= 5; i++ {
			v := xmin + (xmax-xmin)*float64(i)/5
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+pw*float64(i)/5, top+ph+18, fmtTick(v))
		}
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#111"/>`+"\n", left, top+ph, left+pw, top+ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+pw/2, H-10, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, esc(c.YLabel))
	for i, s := range c.Series {
		color := s.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for j := range s.X {
			if math.IsNaN(s.Y[j]) {
				continue
			}
			x, y := sx(s.X[j]), sy(s.Y[j])
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%d" fill="%s"/>`+"\n", x, y, map[bool]int{true: 2, false: 3}[s.Points], color)
		}
		if !s.Points && len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
		}
		ly := top + 10 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			left+pw+12, ly, left+pw+36, ly, color, dash, left+pw+42, ly+4, esc(s.Name))
	}
	if c.Note != "" {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+pw+12, top+20+float64(len(c.Series))*20, esc(c.Note))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func fmtTick(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
