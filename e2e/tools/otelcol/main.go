// Command otelcol is a minimal OpenTelemetry Collector for the end-to-end
// tests: OTLP in, tail sampling and batch, OTLP gRPC / debug / Prometheus
// out. It is what `ocb` would generate for this component list, written by
// hand so that no builder is needed. It lives in a module of its own so
// that neither the library nor the e2e test module pull the collector's
// dependency tree.
//
// The tail sampling processor is contrib's v0.161.0, not v0.165.1 like the
// prometheus exporter: from v0.162.0 on it needs the module
// pkg/ottl/contexts/xprofile, whose source the Go module proxy does not
// serve ("This module version is not available"). Its config and the
// policies example/collector/config.yaml uses are the same in both (the
// otelcol-contrib 0.165.1 image of docker-compose.yaml runs v0.165.1).
//
//	otelcol --config file:example/collector/config.yaml
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	var (
		f   otelcol.Factories
		err error
	)
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](batchprocessor.NewFactory(), tailsamplingprocessor.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		otlpexporter.NewFactory(),
		debugexporter.NewFactory(),
		prometheusexporter.NewFactory(),
	); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

func main() {
	info := component.BuildInfo{
		Command:     "otelcol",
		Description: "otelqueue e2e OpenTelemetry Collector",
		Version:     "0.165.0-otelqueue",
	}
	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatalf("collector server run finished with error: %v", err)
	}
}
