package chart

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestSVG(t *testing.T) {
	c := &Chart{Title: "a < b", XLabel: "x", YLabel: "y", YMax: 1, Note: "ratio 2.00x", Series: []Series{
		{Name: "blue line", X: []float64{0, 1, 2}, Y: []float64{0.1, 0.5, 0.9}, Color: "#2563eb"},
		{Name: "dashed", X: []float64{0, 2}, Y: []float64{0.2, 0.3}, Dashed: true},
		{Name: "marks", X: []float64{1}, Y: []float64{0.4}, Points: true},
	}}
	svg := c.SVG()
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	for _, want := range []string{"a &lt; b", `stroke="#2563eb"`, `stroke-dasharray="6 4"`, "ratio 2.00x", "blue line", "marks"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want 2 (a series of marks draws none)", n)
	}
}
