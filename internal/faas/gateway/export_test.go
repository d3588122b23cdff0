package gateway

// ClosingOf is closed once g.Close has begun: tests wait on it instead of sleeping.
func ClosingOf(g *Gateway) <-chan struct{} { return g.closing }
