// The report of a one-run client script: written as one JSON line on stdout when the scenario
// finishes, fails or runs out of time; then the script's connections close and it exits.
export function reporter(report, timeoutMs, close) {
  const finish = (error) => {
    clearTimeout(timer);
    if (error) report.errors.push(String(error));
    process.stdout.write(JSON.stringify(report) + '\n');
    close();
    process.exit(0);
  };
  const timer = setTimeout(() => finish('timeout'), timeoutMs);
  return finish;
}
