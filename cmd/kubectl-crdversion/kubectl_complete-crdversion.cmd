@echo off
rem Shell completion of "kubectl crdversion" (kubectl 1.26 or newer): put this
rem file on PATH beside kubectl-crdversion.exe. See kubectl_complete-crdversion.
kubectl-crdversion.exe __complete %*
