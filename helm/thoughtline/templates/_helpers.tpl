{{/*
Names and labels shared by every template.
*/}}

{{- define "thoughtline.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: release-prefixed unless the release name already contains the chart name. */}}
{{- define "thoughtline.fullname" -}}
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

{{- define "thoughtline.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "thoughtline.selectorLabels" -}}
app.kubernetes.io/name: {{ include "thoughtline.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "thoughtline.labels" -}}
helm.sh/chart: {{ include "thoughtline.chart" . }}
{{ include "thoughtline.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: worker
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "thoughtline.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "thoughtline.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "thoughtline.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret and key the worker reads THOUGHTLINE_REDIS_URL from. */}}
{{- define "thoughtline.redisSecretName" -}}
{{- default (printf "%s-redis" (include "thoughtline.fullname" .)) .Values.redis.existingSecret }}
{{- end }}

{{- define "thoughtline.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}
{{- .Values.redis.existingSecretKey }}
{{- else }}
{{- print "redis-url" }}
{{- end }}
{{- end }}

{{/*
The Redis Cluster hash tag of a key: the text between the first "{" and the next "}", when
that text is not empty (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags).
Empty when the key has none.
*/}}
{{- define "thoughtline.hashTag" -}}
{{- $opening := regexFind "\\{[^}]*\\}" . }}
{{- if gt (len $opening) 2 }}{{ $opening }}{{ end }}
{{- end }}

{{/*
Fail at render time, not at pod start, unless every stream shares one hash tag: one atomic
step touches them all (the script that publishes a batch's outputs and acknowledges its input),
and the worker refuses to start otherwise.
*/}}
{{- define "thoughtline.checkHashTags" -}}
{{- $config := .Values.config }}
{{- $expected := include "thoughtline.hashTag" $config.inputStream }}
{{- if not $expected }}
{{- fail (printf "config.inputStream %q has no {hash tag}: the worker requires one" $config.inputStream) }}
{{- end }}
{{- range $key := list "outputStream" "deadStream" "deltasStream" }}
{{- $stream := get $config $key }}
{{- if ne (include "thoughtline.hashTag" $stream) $expected }}
{{- fail (printf "config.%s %q must carry the hash tag %s of config.inputStream" $key $stream $expected) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "thoughtline.checkAutoscalers" -}}
{{- if and .Values.keda.enabled .Values.autoscaling.enabled }}
{{- fail "keda.enabled and autoscaling.enabled both create a HorizontalPodAutoscaler: enable one" }}
{{- end }}
{{- end }}

{{/* KEDA's connection settings, from the keda.* values or else parsed from redis.url. */}}
{{- define "thoughtline.kedaAddress" -}}
{{- if .Values.keda.address }}
{{- .Values.keda.address }}
{{- else if .Values.redis.existingSecret }}
{{- fail "keda.address (host:port) is required with redis.existingSecret: KEDA cannot read the URL from the Secret" }}
{{- else }}
{{- $url := urlParse .Values.redis.url }}
{{- if contains ":" $url.host }}
{{- $url.host }}
{{- else }}
{{- printf "%s:6379" $url.host }}
{{- end }}
{{- end }}
{{- end }}

{{- define "thoughtline.kedaDatabaseIndex" -}}
{{- if ne (toString .Values.keda.databaseIndex) "" }}
{{- .Values.keda.databaseIndex }}
{{- else if and (not .Values.redis.existingSecret) (trimPrefix "/" (urlParse .Values.redis.url).path) }}
{{- trimPrefix "/" (urlParse .Values.redis.url).path }}
{{- else }}
{{- print "0" }}
{{- end }}
{{- end }}

{{- define "thoughtline.kedaEnableTLS" -}}
{{- if ne (toString .Values.keda.enableTLS) "" }}
{{- .Values.keda.enableTLS }}
{{- else if .Values.redis.existingSecret }}
{{- print "false" }}
{{- else }}
{{- eq (urlParse .Values.redis.url).scheme "rediss" }}
{{- end }}
{{- end }}

{{- define "thoughtline.kedaAuthenticationName" -}}
{{- if .Values.keda.authenticationRef }}
{{- .Values.keda.authenticationRef }}
{{- else if .Values.keda.passwordSecret.name }}
{{- printf "%s-redis" (include "thoughtline.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The export (`thoughtline export otlp`, `export.enabled`): pods of their own name label, so that
the workers' selectors (Deployment, Service, PodDisruptionBudget, NetworkPolicy) never match them.
*/}}
{{- define "thoughtline.exportName" -}}
{{- printf "%s-export" (include "thoughtline.fullname" . | trunc 56 | trimSuffix "-") }}
{{- end }}

{{- define "thoughtline.exportSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-export" (include "thoughtline.name" . | trunc 56 | trimSuffix "-") }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "thoughtline.exportLabels" -}}
helm.sh/chart: {{ include "thoughtline.chart" . }}
{{ include "thoughtline.exportSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: export
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Fail at render time what the export could not run with. */}}
{{- define "thoughtline.checkExport" -}}
{{- if not (or .Values.export.otlp.endpoint .Values.export.otlp.tracesEndpoint) }}
{{- fail "export.enabled needs export.otlp.endpoint or export.otlp.tracesEndpoint: where the spans go" }}
{{- end }}
{{- if and .Values.export.serviceMonitor.enabled (not .Values.export.metricsPort) }}
{{- fail "export.serviceMonitor.enabled needs export.metricsPort: with 0 the export serves no /metrics" }}
{{- end }}
{{- end }}

{{/* The collector's TCP ports, comma-separated: export.collectorPorts, else the endpoint URL's. */}}
{{- define "thoughtline.exportCollectorPorts" -}}
{{- if .Values.export.collectorPorts }}
{{- join "," .Values.export.collectorPorts }}
{{- else }}
{{- $url := urlParse (default .Values.export.otlp.endpoint .Values.export.otlp.tracesEndpoint) }}
{{- $port := regexFind ":[0-9]+$" $url.host }}
{{- if $port }}
{{- trimPrefix ":" $port }}
{{- else if eq $url.scheme "https" }}
{{- print "443" }}
{{- else }}
{{- print "80" }}
{{- end }}
{{- end }}
{{- end }}
