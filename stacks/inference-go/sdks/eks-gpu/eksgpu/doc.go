// Package eksgpu exports types, functions, subpackages for provisioning eksgpu resources.
package eksgpu
