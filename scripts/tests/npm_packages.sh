#!/usr/bin/env bash
# Installs the dashboard page's npm packages (scripts/dashboard-site/package-lock.json) when
# node_modules is missing or older than the lock file; otherwise does nothing.
set -euo pipefail
cd "$(dirname "$0")/../dashboard-site"
stamp=node_modules/.package-lock.json
if [ -f node_modules/chart.js/package.json ] && [ -f node_modules/playwright-core/package.json ] &&
   [ "$stamp" -nt package-lock.json ]; then
  echo "npm packages: up to date"
  exit 0
fi
command -v npm >/dev/null || { echo "npm packages: npm not found (install nodejs and npm)" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
echo "npm packages: installed"
