// Package calc does arithmetic.
package calc

// Add returns a plus b.
func Add(a, b int) int {
	return a + b
}

// Mul returns a times b.
func Mul(a, b int) int {
	return a * b
}
