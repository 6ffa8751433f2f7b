module github.com/tops-project/tops/bindings/go

go 1.19
