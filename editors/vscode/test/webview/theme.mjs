// A subset of VS Code's Dark Modern theme variables, set on <html> as VS Code does for real webviews.
export const DARK = {
  '--vscode-font-family': '-apple-system, BlinkMacSystemFont, "Segoe UI", "DejaVu Sans", sans-serif',
  '--vscode-font-size': '13px', '--vscode-editor-font-family': '"DejaVu Sans Mono", monospace', '--vscode-editor-font-size': '12px',
  '--vscode-foreground': '#cccccc', '--vscode-descriptionForeground': '#9d9d9d', '--vscode-errorForeground': '#f85149',
  '--vscode-sideBar-background': '#181818', '--vscode-editor-background': '#1f1f1f', '--vscode-panel-border': '#2b2b2b',
  '--vscode-widget-border': '#313131', '--vscode-focusBorder': '#0078d4',
  '--vscode-button-background': '#0078d4', '--vscode-button-foreground': '#ffffff', '--vscode-button-hoverBackground': '#026ec1',
  '--vscode-button-secondaryBackground': '#313131', '--vscode-button-secondaryForeground': '#cccccc', '--vscode-button-secondaryHoverBackground': '#3c3c3c',
  '--vscode-input-background': '#313131', '--vscode-input-foreground': '#cccccc', '--vscode-input-border': '#3c3c3c',
  '--vscode-dropdown-background': '#313131', '--vscode-dropdown-foreground': '#cccccc', '--vscode-dropdown-border': '#3c3c3c',
  '--vscode-textCodeBlock-background': '#2b2b2b', '--vscode-textLink-foreground': '#4daafc', '--vscode-textBlockQuote-background': '#2b2b2b',
  '--vscode-editorWidget-background': '#202020', '--vscode-editorWarning-foreground': '#cca700', '--vscode-editorError-foreground': '#f14c4c',
  '--vscode-progressBar-background': '#0078d4', '--vscode-scrollbarSlider-background': 'rgba(121,121,121,0.4)',
  '--vscode-inputValidation-warningBackground': '#352a05', '--vscode-inputValidation-warningBorder': '#b89500',
  '--vscode-inputValidation-errorBackground': '#5a1d1d', '--vscode-inputValidation-errorBorder': '#be1100',
  '--vscode-badge-background': '#616161', '--vscode-badge-foreground': '#f8f8f8',
  '--vscode-charts-green': '#89d185', '--vscode-charts-blue': '#3794ff', '--vscode-charts-purple': '#b180d7',
};
