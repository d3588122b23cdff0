{{/*
Names. Resources are <fullname>-<component>; fullname is <release>-<chart> (63 characters at most,
as DNS labels), or the release name alone when it already contains the chart's name.
*/}}
{{- define "continuum.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "continuum.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's resource name: (dict "root" $ "component" "kv") */}}
{{- define "continuum.componentName" -}}
{{- printf "%s-%s" (include "continuum.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "continuum.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every resource carries: (dict "root" $ "component" "kv") */}}
{{- define "continuum.labels" -}}
helm.sh/chart: {{ include "continuum.chart" .root }}
{{ include "continuum.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: continuum
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels selectors match on (stable across upgrades): (dict "root" $ "component" "kv") */}}
{{- define "continuum.selectorLabels" -}}
app.kubernetes.io/name: {{ include "continuum.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* metadata.annotations of every resource, merged with extra ones: (dict "root" $ "extra" .annotations) */}}
{{- define "continuum.annotations" -}}
{{- $all := merge (deepCopy (default (dict) .extra)) (default (dict) .root.Values.commonAnnotations) -}}
{{- with $all -}}
annotations:
{{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
An image reference: (dict "root" $ "image" .Values.images.continuum). The registry is the image's,
else global.imageRegistry; the tag defaults to the chart's appVersion; a digest wins over the tag.
*/}}
{{- define "continuum.image" -}}
{{- $registry := default .root.Values.global.imageRegistry .image.registry -}}
{{- $repo := .image.repository -}}
{{- if $registry -}}{{- $repo = printf "%s/%s" $registry $repo -}}{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repo .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{/* image, imagePullPolicy of a container: (dict "root" $ "image" .Values.images.continuum) */}}
{{- define "continuum.containerImage" -}}
image: {{ include "continuum.image" . | quote }}
imagePullPolicy: {{ .image.pullPolicy }}
{{- end -}}

{{- define "continuum.imagePullSecrets" -}}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ if kindIs "string" . }}{{ . }}{{ else }}{{ .name }}{{ end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* A component's ServiceAccount name: (dict "root" $ "component" "kv" "sa" .Values.kv.serviceAccount) */}}
{{- define "continuum.serviceAccountName" -}}
{{- if .sa.create -}}
{{- default (include "continuum.componentName" .) .sa.name -}}
{{- else -}}
{{- default "default" .sa.name -}}
{{- end -}}
{{- end -}}

{{/* A ServiceAccount document when the component creates one: (dict "root" $ "component" "kv" "sa" ... "automount" bool) */}}
{{- define "continuum.serviceAccount" -}}
{{- if .sa.create }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "continuum.serviceAccountName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "continuum.labels" . | nindent 4 }}
  {{- with include "continuum.annotations" (dict "root" .root "extra" .sa.annotations) }}{{ . | nindent 2 }}{{ end }}
automountServiceAccountToken: {{ .automount }}
{{- end }}
{{- end -}}

{{/*
The scheduling and security part of a pod spec every component shares:
(dict "root" $ "c" .Values.kv "component" "kv")
*/}}
{{- define "continuum.podScheduling" -}}
{{- include "continuum.imagePullSecrets" .root }}
{{- with .c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A Service's type, port and nodePort lines: (dict "svc" .Values.faas.service "target" "http") */}}
{{- define "continuum.servicePort" -}}
type: {{ .svc.type }}
ports:
  - name: {{ .target }}
    port: {{ .svc.port }}
    targetPort: {{ .target }}
    protocol: TCP
    {{- if and (eq .svc.type "NodePort") .svc.nodePort }}
    nodePort: {{ .svc.nodePort }}
    {{- end }}
{{- end -}}

{{/* The kv members' headless Service (their stable DNS names) */}}
{{- define "continuum.kv.peerService" -}}
{{- printf "%s-peer" (include "continuum.componentName" (dict "root" . "component" "kv")) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Member i's host name: <statefulset>-<i>.<headless>.<namespace>.svc.<domain>: (dict "root" $ "i" 0) */}}
{{- define "continuum.kv.memberHost" -}}
{{- printf "%s-%d.%s.%s.svc.%s" (include "continuum.componentName" (dict "root" .root "component" "kv")) (int .i) (include "continuum.kv.peerService" .root) .root.Release.Namespace .root.Values.global.clusterDomain -}}
{{- end -}}

{{/* --initial-cluster: every ordinal's name=peerURL */}}
{{- define "continuum.kv.initialCluster" -}}
{{- $members := list -}}
{{- $sts := include "continuum.componentName" (dict "root" . "component" "kv") -}}
{{- range $i := until (int .Values.kv.replicaCount) -}}
{{- $members = append $members (printf "%s-%d=http://%s:%d" $sts $i (include "continuum.kv.memberHost" (dict "root" $ "i" $i)) (int $.Values.kv.ports.peer)) -}}
{{- end -}}
{{- join "," $members -}}
{{- end -}}

{{/* The kv client URL other components use by default */}}
{{- define "continuum.kv.clientURL" -}}
{{- printf "http://%s.%s.svc.%s:%d" (include "continuum.componentName" (dict "root" . "component" "kv")) .Release.Namespace .Values.global.clusterDomain (int .Values.kv.clientService.port) -}}
{{- end -}}

{{/*
Checks of values that the schema cannot express (they span several values); each failure says
which value is wrong and what is allowed.
*/}}
{{- define "continuum.validate" -}}
{{- $kv := .Values.kv -}}
{{- if and $kv.enabled (ge (int $kv.clientService.writerOrdinal) (int $kv.replicaCount)) -}}
{{- fail (printf "kv.clientService.writerOrdinal %d: must name a member, 0 to kv.replicaCount-1 (%d)" (int $kv.clientService.writerOrdinal) (sub (int $kv.replicaCount) 1)) -}}
{{- end -}}
{{- $s := .Values.stream -}}
{{- if and (or $s.bridge.enabled $s.aggregator.enabled) (not $s.kafka.brokers) -}}
{{- fail "stream.kafka.brokers: the bridge and the aggregator need Kafka's bootstrap servers (host:port); Kafka is not part of the chart" -}}
{{- end -}}
{{- if and $s.aggregator.enabled (not $s.aggregator.topics) -}}
{{- fail "stream.aggregator.topics: name at least one topic to consume" -}}
{{- end -}}
{{- if and $s.aggregator.enabled (not $s.aggregator.rtdbURL) (not $s.realtimeDB.enabled) -}}
{{- fail "stream.aggregator.rtdbURL: set the realtime database's URL, or enable stream.realtimeDB" -}}
{{- end -}}
{{- if and $s.realtimeDB.enabled (not $s.realtimeDB.kvEndpoints) (not $kv.enabled) -}}
{{- fail "stream.realtimeDB.kvEndpoints: set kv/etcd client URLs, or enable kv" -}}
{{- end -}}
{{- if and .Values.fl.enabled (not .Values.fl.topology) -}}
{{- fail "fl.topology: the FL nodes' CSV (id,role,\"peer:cost,...\",\"class:count,...\") is required when fl is enabled" -}}
{{- end -}}
{{- if .Values.faas.enabled -}}
{{- if not .Values.faas.functions -}}
{{- fail "faas.functions: the gateway needs at least one function (name and handler, source or options.url)" -}}
{{- end -}}
{{- range $i, $f := .Values.faas.functions -}}
{{- $n := add (len (compact (list $f.handler $f.source (dig "url" "" (default (dict) $f.options))))) 0 -}}
{{- if ne (int $n) 1 -}}
{{- fail (printf "faas.functions[%d] (%s): give exactly one of handler, source or options.url" $i $f.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
