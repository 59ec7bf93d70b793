{{/* Names and labels. */}}
{{- define "hindsight.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hindsight.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless service that gives every pod a stable DNS name for its peers. */}}
{{- define "hindsight.peersName" -}}
{{- printf "%s-peers" (include "hindsight.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hindsight.secretName" -}}
{{- default (include "hindsight.fullname" .) .Values.existingSecret }}
{{- end }}

{{- define "hindsight.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hindsight.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "hindsight.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hindsight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hindsight.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hindsight.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: memory-node
{{- end }}

{{/* The DNS name of pod N of this release: hindsight.podHost (list $ N). */}}
{{- define "hindsight.podHost" -}}
{{- $ := index . 0 }}
{{- printf "%s-%d.%s.%s.svc.%s" (include "hindsight.fullname" $) (index . 1) (include "hindsight.peersName" $) $.Release.Namespace $.Values.clusterDomain }}
{{- end }}

{{/* Where the volume and the secrets are mounted. */}}
{{- define "hindsight.dataRoot" -}}/var/lib/hindsight{{- end }}
{{- define "hindsight.tlsDir" -}}/etc/hindsight/tls{{- end }}

{{/*
The node configuration: the values' config with what the chart decides itself laid over it.
*/}}
{{- define "hindsight.config" -}}
{{- $root := include "hindsight.dataRoot" . }}
{{- $fixed := dict
  "node" (dict
    "data_dir" (printf "%s/data" $root)
    "grpc_addr" (printf "0.0.0.0:%d" (int .Values.ports.grpc))
    "http_addr" (printf "0.0.0.0:%d" (int .Values.ports.http)))
  "embedding" (dict "model_dir" (printf "%s/models" $root))
  "auth" (dict "enabled" .Values.auth.enabled "admin_key_env" "HINDSIGHT_ADMIN_KEY")
  "integrity" (dict "enabled" true "key_id" .Values.integrity.keyId "key_env" "HINDSIGHT_RECORD_KEY") }}
{{- if .Values.tls.enabled }}
{{- $tls := dict
  "cert_file" (printf "%s/tls.crt" (include "hindsight.tlsDir" .))
  "key_file" (printf "%s/tls.key" (include "hindsight.tlsDir" .)) }}
{{- if .Values.tls.clientAuth }}
{{- $_ := set $tls "client_ca_file" (printf "%s/ca.crt" (include "hindsight.tlsDir" .)) }}
{{- end }}
{{- $_ := set $fixed "tls" $tls }}
{{- end }}
{{- $config := mergeOverwrite (deepCopy (default dict .Values.config)) $fixed }}
{{- include "hindsight.toml.table" (dict "prefix" "" "table" $config) }}
{{- end }}

{{/*
TOML from a map: a table's plain keys, then its subtables. Helm's toToml writes every number as a
float, which the node refuses for its integer keys; here an integral number is written as one.
*/}}
{{- define "hindsight.toml.table" -}}
{{- $prefix := .prefix }}
{{- $table := .table }}
{{- range $key := keys $table | sortAlpha }}
{{- $value := index $table $key }}
{{- if not (kindIs "map" $value) }}
{{ $key }} = {{ include "hindsight.toml.value" $value }}
{{- end }}
{{- end }}
{{- range $key := keys $table | sortAlpha }}
{{- $value := index $table $key }}
{{- if kindIs "map" $value }}
{{- $name := ternary $key (printf "%s.%s" $prefix $key) (eq $prefix "") }}

[{{ $name }}]
{{- include "hindsight.toml.table" (dict "prefix" $name "table" $value) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hindsight.toml.value" -}}
{{- if kindIs "string" . }}{{ toJson . }}
{{- else if kindIs "bool" . }}{{ . }}
{{- else if or (kindIs "float64" .) (kindIs "float32" .) }}{{ if eq (float64 (floor .)) (float64 .) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- else if or (kindIs "int" .) (kindIs "int64" .) (kindIs "uint64" .) }}{{ . }}
{{- else if kindIs "slice" . }}[{{ range $i, $e := . }}{{ if $i }}, {{ end }}{{ include "hindsight.toml.value" $e }}{{ end }}]
{{- else if kindIs "invalid" . }}{{ fail "a null in config cannot be written as TOML" }}
{{- else }}{{ fail (printf "config value %v cannot be written as TOML" .) }}
{{- end }}
{{- end }}

{{/*
A secret value: the one given, else the one the release's Secret already holds (so that upgrades
keep it), else a new random one.
*/}}
{{- define "hindsight.secretValue" -}}
{{- $ := index . 0 }}
{{- $key := index . 1 }}
{{- $given := index . 2 }}
{{- $fresh := index . 3 }}
{{- if $given }}
{{- $given }}
{{- else }}
{{- $existing := lookup "v1" "Secret" $.Release.Namespace (include "hindsight.fullname" $) }}
{{- if and $existing (hasKey $existing.data $key) }}
{{- index $existing.data $key | b64dec }}
{{- else }}
{{- $fresh }}
{{- end }}
{{- end }}
{{- end }}
