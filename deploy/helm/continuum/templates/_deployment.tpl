{{/*
A Deployment of one continuum container, shared by the stream components:
(dict "root" $ "component" "realtime-db" "c" .Values.stream.realtimeDB "image" .Values.images.continuum
      "args" (list ...) "port" 9000 "probe" "/healthz" "volumes" (list ...) "mounts" (list ...)
      "annotations" (dict ...) "strategy" (dict ...) "automount" false
      "env" (list ...))
port 0: no port and a no network probe; probe "": a TCP probe on the port.
*/}}
{{- define "continuum.deployment" -}}
{{- $ctx := dict "root" .root "component" .component }}
{{- $c := .c }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "continuum.componentName" $ctx }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "continuum.labels" $ctx | nindent 4 }}
  {{- with include "continuum.annotations" (dict "root" .root) }}{{ . | nindent 2 }}{{ end }}
spec:
  replicas: {{ $c.replicaCount | default 1 }}
  {{- with .strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "continuum.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "continuum.labels" $ctx | nindent 8 }}
        {{- with $c.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- $ann := merge (deepCopy (default (dict) .annotations)) (default (dict) $c.podAnnotations) }}
      {{- with $ann }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "continuum.serviceAccountName" (dict "root" .root "component" .component "sa" $c.serviceAccount) }}
      automountServiceAccountToken: {{ .automount | default false }}
      {{- include "continuum.podScheduling" (dict "root" .root "c" $c) | trim | nindent 6 }}
      containers:
        - name: {{ .component }}
          {{- include "continuum.containerImage" (dict "root" .root "image" .image) | nindent 10 }}
          args:
            {{- range .args }}
            - {{ . | quote }}
            {{- end }}
            {{- range $c.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          {{- $env := concat (default (list) .env) (default (list) $c.extraEnv) }}
          {{- with $env }}
          env:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- if .port }}
          ports:
            - name: http
              containerPort: {{ .port }}
              protocol: TCP
          readinessProbe:
            {{- if .probe }}
            httpGet: {path: {{ .probe }}, port: http}
            {{- else }}
            tcpSocket: {port: http}
            {{- end }}
            periodSeconds: 5
          livenessProbe:
            tcpSocket: {port: http}
            periodSeconds: 10
            failureThreshold: 6
          {{- end }}
          {{- with $c.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with $c.containerSecurityContext }}
          securityContext:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- with .mounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- with .volumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- if and .port $c.service }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "continuum.componentName" $ctx }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "continuum.labels" $ctx | nindent 4 }}
  {{- with include "continuum.annotations" (dict "root" .root "extra" $c.service.annotations) }}{{ . | nindent 2 }}{{ end }}
spec:
  {{- include "continuum.servicePort" (dict "svc" $c.service "target" "http") | nindent 2 }}
  selector:
    {{- include "continuum.selectorLabels" $ctx | nindent 4 }}
{{- end }}
{{- include "continuum.serviceAccount" (dict "root" .root "component" .component "sa" $c.serviceAccount "automount" (.automount | default false)) }}
{{- end -}}
