package rho

import "fmt"

// BangBang is the thesis's bang-bang controller (section 6.3.1): rho is
// High when events per poll beat events per merge over the most recent
// Window share of the operations, Low when merges do better, and unchanged
// on a tie or while one side has no operation in the window. It is never 0
// or 1, so each side keeps being measured.
type BangBang struct {
	Low, High float64 // default 0.10 and 0.90
	Window    float64 // share of history looked at; default 0.30

	rho  float64
	hist history
}

// NewBangBang returns the controller with the thesis's settings. It starts
// at High: a new crawler has nothing to compare yet and polling needs no
// peer.
func NewBangBang() *BangBang {
	return &BangBang{Low: 0.10, High: 0.90, Window: 0.30, rho: 0.90}
}

// init fills zero settings with the thesis's values.
func (b *BangBang) init() {
	if b.Low == 0 && b.High == 0 {
		b.Low, b.High = 0.10, 0.90
	}
	if b.Window <= 0 || b.Window > 1 {
		b.Window = 0.30
	}
	if b.rho == 0 {
		b.rho = b.High
	}
}

func (b *BangBang) Rho() float64 {
	b.init()
	return b.rho
}

func (b *BangBang) Observe(o Outcome) {
	b.init()
	b.hist.add(o)
	w := b.hist.recent(b.Window)
	if w.polls == 0 || w.merges == 0 {
		return
	}
	// p_r > m_r, compared without division.
	p := float64(w.pollEvents) * float64(w.merges)
	m := float64(w.mergeEvents) * float64(w.polls)
	switch {
	case p > m:
		b.rho = b.High
	case m > p:
		b.rho = b.Low
	}
}

func (b *BangBang) Name() string { return "bangbang" }

// Rates returns p_r and m_r over the current window, for reports.
func (b *BangBang) Rates() (pr, mr float64) {
	w := b.hist.recent(b.Window)
	return ratio(w.pollEvents, w.polls), ratio(w.mergeEvents, w.merges)
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (b *BangBang) String() string {
	pr, mr := b.Rates()
	return fmt.Sprintf("bangbang rho=%.2f p_r=%.3f m_r=%.3f", b.Rho(), pr, mr)
}
