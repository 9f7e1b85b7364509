//go:build !linux

package sock

// poller: off Linux there is none, and Park never parks.
type poller struct{}

func newPoller() *poller           { return nil }
func (p *poller) add(c *Conn) bool { return false }
func (p *poller) remove(c *Conn)   {}
