from paperclip.cli.main import main

main()
