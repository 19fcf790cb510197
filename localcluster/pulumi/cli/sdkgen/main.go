// Command pulumi-sdkgen-nodejs writes the TypeScript SDK of a Pulumi package from its schema, with
// Pulumi's own Node.js code generator (github.com/pulumi/pulumi/pkg/v3/codegen/nodejs, at the CLI's
// pin): what `pulumi package add` has the Node.js language host do (its GeneratePackage), which the
// v3.68 host the Go module proxy serves does not implement (localcluster/pulumi/README.md).
//
//	pulumi-sdkgen-nodejs SCHEMA.json OUT_DIR
//
// As `pulumi package add` does (pkg/v3 cmd/pulumi/packages/packages.go, InstallPackage and GenSDK):
// the schema is bound with dangling references allowed (errors are reported and nothing is
// written), marked SupportPack (so the SDK carries the schema's version), generated as a local SDK
// (compiled by its own postinstall script), and OUT_DIR is replaced by it; `package add` writes it
// to <project>/sdks/<package>. No other package is loaded: a schema referencing one is refused.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// tool is named in the header of every generated file.
const tool = "pulumi-sdkgen-nodejs"

// noLoader refuses every package reference: the SDK is generated from the one schema given.
type noLoader struct{}

func (noLoader) refuse(name string) error {
	return fmt.Errorf("the schema references package %q; %s generates from one schema and loads no other package", name, tool)
}

func (l noLoader) LoadPackage(pkg string, _ *semver.Version) (*schema.Package, error) {
	return nil, l.refuse(pkg)
}

func (l noLoader) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, l.refuse(d.Name)
}

func (l noLoader) LoadPackageReference(pkg string, _ *semver.Version) (schema.PackageReference, error) {
	return nil, l.refuse(pkg)
}

func (l noLoader) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return nil, l.refuse(d.Name)
}

func generate(schemaPath, out string) error {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	pkg, diags, err := schema.BindSpec(spec, noLoader{}, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return err
	}
	if diags.HasErrors() {
		return fmt.Errorf("%s: %w", schemaPath, diags)
	}
	pkg.SupportPack = true
	files, err := nodejs.GeneratePackage(tool, pkg, nil, nil, true, noLoader{})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintf(os.Stderr, "usage: %s SCHEMA.json OUT_DIR\n", tool)
		os.Exit(2)
	}
	if err := generate(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", tool, err)
		os.Exit(1)
	}
}
